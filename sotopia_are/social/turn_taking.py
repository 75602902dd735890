"""Who acts in each turn: round-robin, simultaneous, random (seeded) or a fixed order.

A policy is made per episode (it may keep state, e.g. whose turn was last) and asked once
per turn with the participants still in the conversation.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol

from sotopia_are.simulation.apps.app import derive_seed

from .spec import EpisodeSpec

__all__ = [
    "FixedOrder",
    "RandomOrder",
    "RoundRobin",
    "Simultaneous",
    "TurnPolicy",
    "make_turn_policy",
]


class TurnPolicy(Protocol):
    """Chooses the actors of a turn among the ``active`` participants (never empty)."""

    def actors(self, turn_number: int, active: Sequence[str]) -> tuple[str, ...]: ...


class RoundRobin:
    """One agent per turn, in the participants' order, skipping those who left."""

    def __init__(self, participants: Sequence[str]) -> None:
        self._participants = tuple(participants)
        self._next = 0

    def actors(self, turn_number: int, active: Sequence[str]) -> tuple[str, ...]:
        count = len(self._participants)
        for offset in range(count):
            index = (self._next + offset) % count
            name = self._participants[index]
            if name in active:
                self._next = index + 1
                return (name,)
        raise ValueError("round-robin needs at least one active participant")


class Simultaneous:
    """Every active agent acts in every turn."""

    def actors(self, turn_number: int, active: Sequence[str]) -> tuple[str, ...]:
        return tuple(active)


class RandomOrder:
    """One active agent per turn, drawn from a generator seeded with the episode seed.

    The seed goes through :func:`derive_seed` (sha256), so the order is the same in every
    process regardless of hash randomisation.
    """

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(derive_seed(seed, "turn-order"))

    def actors(self, turn_number: int, active: Sequence[str]) -> tuple[str, ...]:
        return (active[self._rng.randrange(len(active))],)


class FixedOrder:
    """The actor of each turn is given (e.g. the speakers of a parsed script)."""

    def __init__(self, order: Sequence[str]) -> None:
        self._order = tuple(order)

    def actors(self, turn_number: int, active: Sequence[str]) -> tuple[str, ...]:
        if turn_number >= len(self._order):
            raise ValueError(
                f"the fixed turn order has {len(self._order)} turns; "
                f"turn {turn_number} has no actor"
            )
        actor = self._order[turn_number]
        if actor not in active:
            raise ValueError(f"turn {turn_number} is {actor!r}'s, who has left the conversation")
        return (actor,)


def make_turn_policy(spec: EpisodeSpec) -> TurnPolicy:
    """A fresh policy for one episode of ``spec``."""
    match spec.turn_policy:
        case "round-robin":
            return RoundRobin(spec.agent_names)
        case "simultaneous":
            return Simultaneous()
        case "random":
            return RandomOrder(spec.seed)
        case "fixed":
            assert spec.turn_order is not None  # checked by the spec
            return FixedOrder(spec.turn_order)
