"""Reading a participant's submission: the JSON an API client posts, checked against the
seat's current turn before the runner ever sees it.

A conversation action is ``{"action_type": ..., "argument": ..., "to": [...]}`` (``to``
names the recipients of a private action, e.g. a whisper); a game move is ``{"move": ...,
"target": ..., "amount": ..., "argument": ...}``. Whatever the turn does not allow is
refused with the reason (:class:`SubmissionError`), so a person is never refused by the
game or failed by the runner for a move the page let through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from sotopia_are import SotopiaAreError
from sotopia_are.games import check_move
from sotopia_are.messages import AgentAction, GameMove
from sotopia_are.social import AgentTurn

__all__ = ["SubmissionError", "read_submission"]


class SubmissionError(SotopiaAreError, ValueError):
    """A submission the seat may not make now; the message says why."""


def read_submission(turn: AgentTurn, body: Mapping[str, Any]) -> AgentAction | GameMove:
    """The action ``body`` asks for, if ``turn`` allows it; SubmissionError otherwise."""
    if turn.moves:
        return _move(turn, body)
    return _action(turn, body)


def _action(turn: AgentTurn, body: Mapping[str, Any]) -> AgentAction:
    unknown = set(body) - {"action_type", "argument", "to"}
    if unknown:
        raise SubmissionError(f"unknown fields {sorted(unknown)} in a conversation action")
    kind = body.get("action_type")
    if kind not in turn.available_actions:
        raise SubmissionError(
            f"action_type must be one of {list(turn.available_actions)}, not {kind!r}"
        )
    try:
        action = AgentAction.model_validate(
            {"action_type": kind, "argument": body.get("argument", ""), "to": body.get("to")},
            context={"agent_names": list(turn.participants), "sender": turn.agent_name},
        )
    except ValidationError as error:
        raise SubmissionError(_reason(error)) from None
    if action.action_type in ("speak", "action", "non-verbal communication"):
        if not action.argument.strip():
            raise SubmissionError(f"a {action.action_type!r} action needs some text")
    elif action.argument or action.to:
        raise SubmissionError(f"a {action.action_type!r} action takes no text and no recipients")
    return action


def _move(turn: AgentTurn, body: Mapping[str, Any]) -> GameMove:
    unknown = set(body) - {"move", "target", "amount", "argument"}
    if unknown:
        raise SubmissionError(f"unknown fields {sorted(unknown)} in a game move")
    try:
        move = GameMove.model_validate(dict(body))
    except ValidationError as error:
        raise SubmissionError(_reason(error)) from None
    reason = check_move(move, turn.moves)
    if reason is not None:
        raise SubmissionError(reason)
    return move


def _reason(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])
