"""`GameOutcome`: how a game ended and what each player got — the value a verdict is made of.

Per player: its role and team, whether it is alive at the end, whether it won (its team
is among the winners) and its payoff (:class:`~sotopia_are.social.Payoff`): after a deal,
``base + per_unit * amount``; else, after an end condition, ``win`` or ``lose``; else (the
cycle bound) ``no_deal``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from .ends import EndedBy, Ending
from .state import GameState

__all__ = ["GameOutcome", "PlayerOutcome", "outcome_from"]


class PlayerOutcome(BaseModel):
    """One player's result."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    role: str
    team: str
    alive: bool
    won: bool
    payoff: int


class GameOutcome(BaseModel):
    """How a game ended: ``ended_by`` an end condition or the cycle bound, ``winners``
    (teams), ``reason`` in words, after ``cycles`` cycles (the last maybe unfinished),
    the accepted offer's amount as ``deal`` (None without one) and one row per player, in
    seat order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ended_by: EndedBy
    winners: tuple[str, ...]
    reason: str
    cycles: int
    deal: int | None
    players: tuple[PlayerOutcome, ...]

    def player(self, name: str) -> PlayerOutcome:
        """The row of the player ``name``; KeyError if there is none."""
        for row in self.players:
            if row.name == name:
                return row
        raise KeyError(name)


def outcome_from(state: GameState, ending: Ending) -> GameOutcome:
    """The outcome of the game ``state`` ended by ``ending``."""
    amount = None if state.deal is None else state.deal.offer.amount
    players = []
    for name in state.seats:
        role = state.roles[name]
        won = role.team in ending.winners
        payoff = role.payoff
        if amount is not None:
            value = payoff.base + payoff.per_unit * amount
        elif ending.by != "cycle_limit":
            value = payoff.win if won else payoff.lose
        else:
            value = payoff.no_deal
        players.append(
            PlayerOutcome(
                name=name,
                role=role.name,
                team=role.team,
                alive=state.is_alive(name),
                won=won,
                payoff=value,
            )
        )
    return GameOutcome(
        ended_by=ending.by,
        winners=ending.winners,
        reason=ending.reason,
        cycles=state.cycle,
        deal=amount,
        players=tuple(players),
    )
