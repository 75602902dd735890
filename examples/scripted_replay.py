"""Replay a human-written script through the episode runner with ScriptedAgents.

The script (``examples/scripts/bakery_negotiation.txt``) is parsed, each action becomes one
turn played by its speaker, and the result is an episode like any other: an event log,
each agent's view, a transcript and an ARE JSON export. Run:
``python examples/scripted_replay.py``.
"""

import asyncio
from pathlib import Path

from sotopia_are.agents import ScriptedAgent
from sotopia_are.social import EpisodeSpec, export_episode, run_episode, script_spec

SCRIPT = Path(__file__).parent / "scripts" / "bakery_negotiation.txt"


async def main() -> None:
    text = SCRIPT.read_text()
    base = EpisodeSpec(
        episode_id="bakery-negotiation",
        scenario="A small neighbourhood bakery, ten minutes before closing.",
        agent_names=["Mara Quinn", "Teo Alvarez"],
        agent_backgrounds=[
            "Mara Quinn owns the bakery and hates throwing bread away.",
            "Teo Alvarez runs a café two streets away.",
        ],
        agent_goals=[
            "Sell the unsold loaves for at least 60% of the shelf price.",
            "Secure a standing order for day-old bread at half price or less.",
        ],
    )
    spec = script_spec(base, text)
    result = await run_episode(spec, ScriptedAgent.from_script(text, spec.agent_names))
    print(result.transcript())
    print(f"\n{len(result.events)} AGENT events; ended: {result.reason}")
    print(f"ARE export: {len(export_episode(result))} bytes of scenario JSON")


if __name__ == "__main__":
    asyncio.run(main())
