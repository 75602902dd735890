"""A game's end-of-episode rewards in the training env: from its outcome, recomputed from
the log, and any judge's scores."""

from __future__ import annotations

from collections.abc import Mapping

from sotopia_are.games import GameOutcome, outcome_of
from sotopia_are.record import EpisodeRecord
from sotopia_are.social import EpisodeStatus

__all__ = ["DEFAULT_GAME_REWARD_WEIGHTS", "OUTCOME_SCORES", "finished_outcome", "game_reward"]

DEFAULT_GAME_REWARD_WEIGHTS: Mapping[str, float] = {"payoff": 1.0}
"""A game's end-of-episode reward unless told otherwise: the agent's payoff."""

OUTCOME_SCORES = ("won", "payoff", "alive")
"""The scores a game's outcome gives each agent (reward weights may name them)."""


def finished_outcome(record: EpisodeRecord) -> GameOutcome | None:
    """A finished game's outcome, recomputed from its log (None if it did not finish)."""
    if record.status is not EpisodeStatus.COMPLETE:
        return None
    return outcome_of(record.spec, record.entries)


def game_reward(
    weights: Mapping[str, float],
    rated: Mapping[str, float] | None,
    outcome: GameOutcome | None,
    name: str,
) -> float:
    """``name``'s reward for the game: ``weights`` over its outcome scores (none: 0) and
    its judge scores (unrated: 0)."""
    scores = dict(rated or {})
    if outcome is not None:
        row = outcome.player(name)
        scores.update(won=float(row.won), payoff=row.payoff, alive=float(row.alive))
    return sum(weight * scores.get(dimension, 0.0) for dimension, weight in weights.items())
