"""An episode spec from profiles: an ``EnvironmentProfile`` and its agents'
``AgentProfile``s (Sotopia's way of pairing characters with a scenario)."""

from __future__ import annotations

from collections.abc import Sequence

from sotopia_are.social import EpisodeSpec
from sotopia_are.storage import AgentProfile, EnvironmentProfile, EpisodeStore

from .errors import StudyInputError

__all__ = ["agent_background", "spec_from_profiles", "spec_from_stored_profiles"]


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
    environment: EnvironmentProfile,
    agents: Sequence[AgentProfile],
    *,
    episode_id: str | None = None,
    name: str | None = None,
    max_turns: int = 20,
) -> EpisodeSpec:
    """The spec of an episode of ``environment`` played by ``agents`` (in the order of the
    environment's goals), with the id ``episode_id`` if given, else without an id (each
    run then gets a fresh one, from ``name`` if given). ``ValueError`` if there are not as
    many agents as goals.

    Args:
        environment: The scenario, one goal per agent, and how the agents relate.
        agents: The characters, in the order of the environment's goals; each one's
            background is :func:`agent_background` of its profile.
        episode_id: The episode's id (default: none, so each run gets a fresh one).
        name: The scenario's name, kept as its records' ``scenario_id``.
        max_turns: The most turns the episode may last.

    Returns:
        An :class:`~sotopia_are.social.EpisodeSpec` with the default rules of play.

    Raises:
        ValueError: Not as many agents as the environment has goals.

    Example:
        ```python
        mara = sa.AgentProfile(first_name="Mara", last_name="Quinn", occupation="Baker")
        teo = sa.AgentProfile(first_name="Teo", last_name="Alvarez", occupation="Café owner")
        bakery = sa.EnvironmentProfile(scenario="Closing time at the bakery.",
                                       agent_goals=["Sell the bread.", "Buy it cheap."])
        spec = sa.spec_from_profiles(bakery, [mara, teo], max_turns=6)
        ```
    """
    if len(agents) != len(environment.agent_goals):
        raise StudyInputError(
            f"environment {environment.pk} has {len(environment.agent_goals)} agent goals "
            f"but {len(agents)} agents were given"
        )
    return EpisodeSpec(
        **({"episode_id": episode_id} if episode_id is not None else {}),
        name=name,
        scenario=environment.scenario,
        agent_names=[agent.name for agent in agents],
        agent_backgrounds=[agent_background(agent) for agent in agents],
        agent_goals=list(environment.agent_goals),
        relationship=environment.relationship.name.replace("_", " "),
        max_turns=max_turns,
    )


def spec_from_stored_profiles(
    store: EpisodeStore, env_id: str, agent_ids: Sequence[str], *, max_turns: int = 20
) -> EpisodeSpec:
    """:func:`spec_from_profiles` with profiles read from ``store`` by their ids, named
    after the environment (its codename, else ``env_id``)."""
    environment = store.get(EnvironmentProfile, env_id)
    agents = [store.get(AgentProfile, pk) for pk in agent_ids]
    return spec_from_profiles(
        environment, agents, name=environment.codename or env_id, max_turns=max_turns
    )
