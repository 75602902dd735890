"""Scripted episodes for the storage tests: real runs of the social runner, no model."""

from __future__ import annotations

from sotopia_are.agents import ScriptedAgent
from sotopia_are.social import EpisodeSpec, ScheduledEnvEvent, SocialAgent, script_spec

NAMES = ["Ines Varga", "Kofi Mensah", "Lena Ortiz"]

SCRIPT = """Turn #1
Ines Varga said: "The shared fridge is a mess again."
Turn #2
Kofi Mensah [private to ['Lena Ortiz']] said: "She means my leftovers."
Turn #3
Lena Ortiz [action] opens the fridge and winces
Turn #4
Kofi Mensah said: "Fine, I will clean it tonight."
Turn #5
Ines Varga left the conversation
"""


def flat_spec(episode_id: str, *, seed: int = 0) -> EpisodeSpec:
    """Three flatmates argue about the fridge; an ENV announcement before turn 2."""
    base = EpisodeSpec(
        episode_id=episode_id,
        scenario="Three flatmates meet in the kitchen about the shared fridge.",
        agent_names=NAMES,
        agent_backgrounds=[f"{name} shares the flat." for name in NAMES],
        agent_goals=["Get the fridge cleaned.", "Avoid cleaning.", "Keep the peace."],
        env_events=[ScheduledEnvEvent(turn=2, content="The landlord texts: inspection Friday.")],
        seed=seed,
    )
    return script_spec(base, SCRIPT)


def flat_agents(spec: EpisodeSpec) -> dict[str, SocialAgent]:
    return dict(ScriptedAgent.from_script(SCRIPT, spec.agent_names))
