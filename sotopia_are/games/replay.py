"""`outcome_of`: a finished game's outcome, recomputed from its conversation entries.

The log is the single source of truth: folding the game's state over the moves the log
holds (in log order) gives the outcome the runner computed — the deal, every resolution
and every tie draw follow from the spec's seed and those moves.
"""

from __future__ import annotations

from collections.abc import Iterable

from sotopia_are.messages import GameMove
from sotopia_are.social import ConversationEntry, EpisodeSpec

from .outcome import GameOutcome
from .play import GamePlay

__all__ = ["outcome_of"]


def outcome_of(spec: EpisodeSpec, entries: Iterable[ConversationEntry]) -> GameOutcome:
    """The outcome of the finished game of ``spec`` whose entries (a live
    ``views.entries``, or ``EpisodeViews.of_exported(spec, record.events).entries``) are
    ``entries``. ValueError if they are not the log of a finished game of ``spec``: a move
    by a player who was not asked, an illegal move, moves missing (the game did not end)
    or left over."""
    moves: list[tuple[str, GameMove]] = [
        (entry.sender, entry.move) for entry in entries if entry.move is not None
    ]
    steps = GamePlay(spec).steps()
    position = 0
    try:
        ask = next(steps)
        while True:
            if position + len(ask.actors) > len(moves):
                raise ValueError(
                    f"the game did not end: the log holds {len(moves)} moves, but the game "
                    f"asked {list(ask.actors)} in {ask.phase} after {position}"
                )
            answers = moves[position : position + len(ask.actors)]
            senders = tuple(sender for sender, _ in answers)
            if senders != ask.actors:
                raise ValueError(
                    f"the log's moves {position} on are by {list(senders)}, but the game "
                    f"asked {list(ask.actors)} in {ask.phase}"
                )
            position += len(answers)
            ask = steps.send([move for _, move in answers])
    except StopIteration as stop:
        outcome: GameOutcome = stop.value
    if position != len(moves):
        raise ValueError(f"the game ended after {position} moves but the log holds {len(moves)}")
    return outcome
