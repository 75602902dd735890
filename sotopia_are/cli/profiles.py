"""An episode spec from stored profiles: an ``EnvironmentProfile`` and its agents'
``AgentProfile``s (Sotopia's way of pairing characters with a scenario)."""

from __future__ import annotations

from collections.abc import Sequence

from sotopia_are.social import EpisodeSpec
from sotopia_are.storage import AgentProfile, EnvironmentProfile, EpisodeStore

from .common import fail

__all__ = ["agent_background", "spec_from_profiles"]


def agent_background(profile: AgentProfile) -> str:
    """The character as Sotopia describes it: who they are, their public information and
    personality. The secret is left out: every participant sees every background (only
    goals are hidden), so a secret there would not be one."""
    who = " ".join(
        part
        for part in (
            f"a {profile.age}-year-old" if profile.age else "",
            profile.gender.lower(),
            profile.occupation.lower() or "person",
        )
        if part
    )
    parts = [f"{profile.name} is {who}."]
    if profile.gender_pronoun:
        parts.append(f"{profile.gender_pronoun} pronouns.")
    if profile.public_info:
        parts.append(profile.public_info)
    if profile.personality_and_values:
        parts.append(f"Personality and values: {profile.personality_and_values}")
    return " ".join(parts)


def spec_from_profiles(
    store: EpisodeStore, env_id: str, agent_ids: Sequence[str], *, max_turns: int = 20
) -> EpisodeSpec:
    """The spec of an episode of environment ``env_id`` played by the agents ``agent_ids``
    (in the order of the environment's goals). :func:`fail` if the counts differ."""
    environment = store.get(EnvironmentProfile, env_id)
    agents = [store.get(AgentProfile, pk) for pk in agent_ids]
    if len(agents) != len(environment.agent_goals):
        fail(
            f"environment {env_id} has {len(environment.agent_goals)} agent goals but "
            f"{len(agents)} agents were given (--agent-ids)"
        )
    return EpisodeSpec(
        episode_id=environment.codename or env_id,
        scenario=environment.scenario,
        agent_names=[agent.name for agent in agents],
        agent_backgrounds=[agent_background(agent) for agent in agents],
        agent_goals=list(environment.agent_goals),
        relationship=environment.relationship.name.replace("_", " "),
        max_turns=max_turns,
    )
