"""Three agents, one private message: each agent's view holds only what it may see.

Priya whispers to Mira; Tomas never sees it — not in his transcript, not in his prompt.
The evaluator's transcript is omniscient and marks the whisper as private. Run:
``python examples/three_agents_private.py``.
"""

import asyncio

from sotopia_are.agents import ScriptedAgent
from sotopia_are.messages import AgentAction
from sotopia_are.social import EpisodeSpec, run_episode


def say(text: str, to: list[str] | None = None) -> AgentAction:
    return AgentAction(action_type="speak", argument=text, to=to)


async def main() -> None:
    names = ["Mira Okafor", "Tomas Lind", "Priya Nair"]
    spec = EpisodeSpec(
        episode_id="garden-plot",
        scenario="Three neighbours decide who gets the last free plot of the community garden.",
        agent_names=names,
        agent_backgrounds=[
            "Mira grows vegetables for the food bank.",
            "Tomas wants a plot for his beehives.",
            "Priya chairs the garden committee.",
        ],
        agent_goals=[
            "Get the plot for the food bank.",
            "Get the plot for the bees.",
            "Give the plot to whoever helps the most people, without a public fight.",
        ],
        max_turns=6,
    )
    agents = [
        ScriptedAgent(names[0], [say("The food bank feeds forty families."), say("Thank you!")]),
        ScriptedAgent(names[1], [say("Bees pollinate every plot here."), say("Fair enough.")]),
        ScriptedAgent(
            names[2],
            [
                say("Between us: the committee leans towards you, Mira.", to=[names[0]]),
                say("Let's put it to a vote next week."),
            ],
        ),
    ]
    result = await run_episode(spec, agents)
    for name in names:
        print(f"--- what {name} saw\n{result.transcript(name)}\n")
    print(f"--- the evaluator's transcript (omniscient)\n{result.transcript()}")


if __name__ == "__main__":
    asyncio.run(main())
