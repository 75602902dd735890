"""Whether a move is one of the moves offered now, and if not, why.

The offered :class:`MoveOption` s are the whole truth: a move is legal iff it names one of
them and takes exactly what that option takes — a ``target`` among its ``targets``, an
``amount`` within its bounds, words for a ``speak`` move; a target or offer move may also
carry words (its stated reason), an ``accept``, ``reject`` or ``pass`` none (they would
read as speech in the transcript). Speech must be readable back from a script
(:func:`~sotopia_are.messages.parser.unreadable_speech`), as every transcript line is.
"""

from __future__ import annotations

from collections.abc import Sequence

from sotopia_are.messages import GameMove
from sotopia_are.messages.parser import unreadable_speech
from sotopia_are.social import MoveOption

__all__ = ["check_move", "option_named"]


def option_named(options: Sequence[MoveOption], name: str) -> MoveOption | None:
    """The option called ``name``, or None."""
    return next((option for option in options if option.name == name), None)


def check_move(move: GameMove, options: Sequence[MoveOption]) -> str | None:
    """Why ``move`` is not one of ``options``, said to the player who made it; None when
    it is legal."""
    option = option_named(options, move.move)
    if option is None:
        allowed = ", ".join(repr(option.name) for option in options)
        return f"{move.move!r} is not a move you may make now (you may: {allowed})"
    name = repr(option.name)
    if option.kind == "target":
        if move.target is None:
            return f"{name} needs a target, one of {list(option.targets)}"
        if move.target not in option.targets:
            return f"{name} cannot target {move.target!r}; it may target {list(option.targets)}"
    elif move.target is not None:
        return f"{name} takes no target"
    if option.kind == "offer":
        if move.amount is None:
            return f"{name} needs an amount from {option.amount_min} to {option.amount_max}"
        if not option.amount_min <= move.amount <= option.amount_max:
            return (
                f"{name} needs an amount from {option.amount_min} to {option.amount_max}, "
                f"not {move.amount}"
            )
    elif move.amount is not None:
        return f"{name} takes no amount"
    if option.kind == "speak":
        if not move.argument.strip():
            return f"{name} needs something to say"
        if reason := unreadable_speech(move.argument):
            return f"what you say cannot be written down as one speech: {reason}"
    elif move.argument and move.target is None and move.amount is None:
        # Words on a vote or an offer read as its stated reason ("vote Bob: he lied");
        # on an accept, a reject or a pass they would read as speech and hide the move.
        return f"{name} takes no words; say them with a speech move"
    return None
