"""`game_outcome`: a stored or returned game's outcome, for what a study shows of it.

Recomputed from the record's events (:func:`sotopia_are.games.outcome_of`), never read
from anywhere else: the log is the one truth, and the outcome verdict
(:class:`~sotopia_are.games.GameJudge`) is made the same way.
"""

from __future__ import annotations

from sotopia_are.games import GameOutcome, deal_roles, outcome_of
from sotopia_are.record import EpisodeRecord
from sotopia_are.social import EpisodeStatus

__all__ = ["game_outcome", "role_in"]


def game_outcome(record: EpisodeRecord) -> GameOutcome | None:
    """How the game of ``record`` ended: winners, and each player's role, team, payoff.
    None for a conversation, a game that did not complete, or a log that is not a
    finished game of its spec (its outcome verdict says why)."""
    if record.spec.game is None or record.status is not EpisodeStatus.COMPLETE:
        return None
    try:
        return outcome_of(record.spec, record.entries)
    except ValueError:
        return None


def role_in(record: EpisodeRecord, agent: str) -> str:
    """``agent``'s role in the game of ``record`` (dealt by its seed, whether or not the
    game finished); ``""`` in a conversation."""
    if record.spec.game is None:
        return ""
    return deal_roles(record.spec)[agent]
