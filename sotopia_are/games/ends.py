"""When a game ends: its end conditions, checked against the state, and the cycle bound.

``team_eliminated`` holds when no member of the team is alive, ``team_parity`` when its
living members are at least as many as all other living players, ``deal`` once an offer
was accepted. The conditions are checked in the rules' order; the first that holds ends
the game, and its ``winners`` win.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sotopia_are.social import EndCondition

from .state import GameState

__all__ = ["EndedBy", "Ending", "cycle_limit", "ending_of"]

EndedBy = Literal["team_eliminated", "team_parity", "deal", "cycle_limit"]
"""How a game ended: one of the end conditions, or its ``max_cycles`` bound."""


@dataclass(frozen=True, slots=True)
class Ending:
    """The game ended ``by`` this, ``winners`` (teams) win; ``reason`` says so in words
    (``"game over: village won"``, ``"cycle limit 4 reached"``)."""

    by: EndedBy
    winners: tuple[str, ...]
    reason: str


def ending_of(state: GameState) -> Ending | None:
    """The ending of the first end condition that holds now, or None."""
    for end in state.rules.ends:
        if _holds(end, state):
            return Ending(end.when, tuple(end.winners), _reason(end, state))
    return None


def cycle_limit(state: GameState) -> Ending:
    """The ending of a game that played all its ``max_cycles`` cycles: nobody wins."""
    return Ending("cycle_limit", (), f"cycle limit {state.rules.max_cycles} reached")


def _holds(end: EndCondition, state: GameState) -> bool:
    if end.when == "deal":
        return state.deal is not None
    assert end.team is not None  # the rules' validator: a team end names its team
    members = len(state.living_team(end.team))
    if end.when == "team_eliminated":
        return members == 0
    return members >= len(state.living()) - members


def _reason(end: EndCondition, state: GameState) -> str:
    winners = end.winners
    if not winners:
        verdict = "nobody won"
    elif len(winners) == 1:
        verdict = f"{winners[0]} won"
    else:
        verdict = f"{', '.join(winners[:-1])} and {winners[-1]} won"
    if state.deal is not None and end.when == "deal":
        return f"game over: deal at {state.deal.offer.amount}, {verdict}"
    return f"game over: {verdict}"
