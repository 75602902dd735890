"""Dealing the roles of a game by the spec's seed.

The seats are every role repeated ``count`` times, in the rules' order, shuffled with a
``random.Random`` seeded by ``derive_seed(spec.seed, "roles")`` — the same deal in every
process — and handed to ``spec.agent_names`` in order.
"""

from __future__ import annotations

import random

from sotopia_are.simulation.apps.app import derive_seed
from sotopia_are.social import EpisodeSpec

from .spec import rules_of

__all__ = ["deal_roles"]


def deal_roles(spec: EpisodeSpec) -> dict[str, str]:
    """Each participant's role name, in ``spec.agent_names`` order. ValueError for a spec
    that is not a game."""
    rules = rules_of(spec)
    seats = [role.name for role in rules.roles for _ in range(role.count)]
    random.Random(derive_seed(spec.seed, "roles")).shuffle(seats)
    return dict(zip(spec.agent_names, seats, strict=True))
