"""`seat_view`: the JSON a seat's client is sent — built from that seat's view alone.

Everything in it comes from what the seat may perceive: its own background (the spec's
``background_for`` the seat: its own goal, the others' hidden unless the episode is
omniscient), the conversation entries visible to it (the one visibility function), and
its own pending turn (the :class:`~sotopia_are.social.AgentTurn` the runner built for
it). Who else is being asked is NOT sent — in a game that can be a secret (who acts at
night) — only whether it is this seat's turn.
"""

from __future__ import annotations

from typing import Any

from sotopia_are.social import ConversationEntry, EpisodeStatus, MoveOption

from .seat import HumanSeat
from .session import HostedSession, SessionState

__all__ = ["entry_json", "seat_view"]


def seat_view(
    session: HostedSession, seat: HumanSeat, *, completion_code: str = ""
) -> dict[str, Any]:
    """``seat``'s view of ``session`` now, as JSON-ready data (see docs/hosting.md).

    ``completion_code`` is shown once the session is over (crowd-work studies)."""
    spec = session.spec
    name = seat.name
    background = spec.background_for(name)
    others = [
        {"name": other, "background": text} | ({"goal": goal} if spec.omniscient else {})
        for other, text, goal in zip(
            background.agent_names,
            background.agent_backgrounds,
            background.agent_goals,
            strict=True,
        )
        if other != name
    ]
    mine = background.agent_names.index(name)
    turn = seat.turn
    over = session.state in (SessionState.FINISHED, SessionState.FAILED)
    view: dict[str, Any] = {
        "seat": name,
        "session": session.number,
        "state": session.state.value,
        "version": session.version(name),
        "scenario": background.scenario,
        "participants": list(background.agent_names),
        "background": background.agent_backgrounds[mine],
        "goal": background.agent_goals[mine],
        "others": others,
        "transcript": [
            entry_json(entry)
            for entry in session.entries
            if entry.visible_to(name) and not entry.is_nothing
        ],
        "your_turn": turn is not None,
        "turn": None,
        "time_left": seat.time_left(),
        "timeouts": len(seat.timeouts),
    }
    if turn is not None:
        view["turn"] = {
            "number": turn.turn_number,
            "phase": turn.phase,
            "legal": _legal(turn.moves, turn.available_actions, turn.participants, name),
        }
    if over:
        view["outcome"] = _outcome(session)
        if completion_code:
            view["completion_code"] = completion_code
    return view


def entry_json(entry: ConversationEntry) -> dict[str, Any]:
    """One transcript line as the page shows it; ``to`` lists the audience of a private
    line (the viewer is in it or sent it, or the line would not be sent)."""
    return {
        "turn": entry.turn,
        "sender": entry.sender,
        "to": list(entry.to) if entry.to is not None else None,
        "private": entry.to is not None,
        "text": entry.render(),
    }


def _legal(
    moves: tuple[MoveOption, ...],
    actions: tuple[str, ...],
    participants: tuple[str, ...],
    name: str,
) -> dict[str, Any]:
    if moves:
        return {
            "moves": [
                {
                    "name": option.name,
                    "kind": option.kind,
                    "description": option.description,
                    "audience": option.audience,
                    "targets": list(option.targets),
                    "amount_min": option.amount_min,
                    "amount_max": option.amount_max,
                }
                for option in moves
            ]
        }
    return {
        "actions": list(actions),
        "recipients": [other for other in participants if other != name],
    }


def _outcome(session: HostedSession) -> dict[str, Any]:
    """How the session ended, as far as every seat may know: a complete episode's reason
    (why it ended; a game's names the winners, told to everyone anyway). A failure's
    reason is not sent: it may name what another seat did out of this one's sight."""
    record = session.record
    if record is None or record.status is not EpisodeStatus.COMPLETE:
        return {"status": "failed", "reason": "the session could not be played to its end"}
    return {"status": record.status.value, "reason": record.reason}
