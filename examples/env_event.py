"""Scheduled ENV events: at turn 3 Aiko's phone rings (only she perceives it), at turn 5
the landlord messages both flatmates from outside the conversation.

The spec is read from ``examples/scenarios/phone_call.json``. ENV events run on the
environment's virtual clock before the agents of their turn act, and reach exactly the
agents who can perceive them. Run: ``python examples/env_event.py``.
"""

import asyncio
from pathlib import Path

from sotopia_are.agents import ScriptedAgent
from sotopia_are.messages import AgentAction
from sotopia_are.social import EpisodeSpec, run_episode

SPEC = Path(__file__).parent / "scenarios" / "phone_call.json"


def say(text: str) -> AgentAction:
    return AgentAction(action_type="speak", argument=text)


async def main() -> None:
    spec = EpisodeSpec.model_validate_json(SPEC.read_text())
    jonas, aiko = spec.agent_names
    agents = [
        ScriptedAgent(
            jonas,
            [
                say("Could we swap weeks? I'm on nights."),
                say("You can't answer the phone now?"),
                say("Friday! Then someone has to clean by Thursday."),
                say("Fine, I'll do it Thursday morning."),
            ],
        ),
        ScriptedAgent(
            aiko,
            [
                say("I have an exam on Wednesday..."),
                AgentAction(action_type="action", argument="answers the phone and steps out"),
                say("Sorry, that was my sister. Did you see the landlord's message?"),
                say("Thanks, I'll take next week then."),
            ],
        ),
    ]
    result = await run_episode(spec, agents)
    for event in result.events:
        print(f"t={event.event_time:>4} {event.event_type.value:5} {event.function_name()}")
    print(f"\n--- what {jonas} saw\n{result.transcript(jonas)}")
    print(f"\n--- what {aiko} saw\n{result.transcript(aiko)}")


if __name__ == "__main__":
    asyncio.run(main())
