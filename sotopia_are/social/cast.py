"""The cast of an episode: its agents by name, checked against the spec's participants."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .protocol import SocialAgent
from .spec import EpisodeSpec

__all__ = ["agents_by_name"]


def agents_by_name(
    spec: EpisodeSpec, agents: Sequence[SocialAgent] | Mapping[str, SocialAgent]
) -> dict[str, SocialAgent]:
    """``agents`` keyed by name, in ``spec.agent_names`` order.

    ValueError if two agents share a name, a mapping files an agent under another name,
    or the names are not exactly the spec's participants.
    """
    if isinstance(agents, Mapping):
        cast = dict(agents)
        for key, agent in cast.items():
            if agent.name != key:
                raise ValueError(f"agent {agent.name!r} is given under the name {key!r}")
    else:
        cast = {}
        for agent in agents:
            if agent.name in cast:
                raise ValueError(f"two agents are named {agent.name!r}")
            cast[agent.name] = agent
    if sorted(cast) != sorted(spec.agent_names):
        raise ValueError(
            f"episode {spec.episode_id!r} needs one agent for each of {spec.agent_names}, "
            f"got agents named {sorted(cast)}"
        )
    return {name: cast[name] for name in spec.agent_names}
