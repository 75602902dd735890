"""The app and checks used by ``team_standup.json``.

Load them when running the scenario:
``sotopia-are scenario run examples/scenarios/are/team_standup.json --apps
examples/scenarios/are/standup_apps.py``.
"""

from typing import Any

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.types import AbstractEnvironment, OperationType, event_registered

__all__ = ["Whiteboard", "everyone_posted", "summary_written"]


class Whiteboard(App):
    """A shared board of notes: who wrote what, with optional tags."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(name)
        self.notes: list[dict[str, Any]] = []

    @event_registered(operation_type=OperationType.WRITE)
    def post(self, author: str, text: str, tags: list[str] | None = None) -> int:
        """Add a note; returns how many notes the board now holds."""
        self.notes.append({"author": author, "text": text, "tags": tags or []})
        return len(self.notes)

    @event_registered()
    def read(self, limit: int = 10) -> list[dict[str, Any]]:
        """The latest ``limit`` notes."""
        return self.notes[-limit:]

    def get_state(self) -> dict[str, Any] | None:
        return {"notes": list(self.notes)}

    def load_state(self, state_dict: dict[str, Any]) -> None:
        self.notes = list(state_dict.get("notes", []))


def everyone_posted(env: AbstractEnvironment) -> bool:
    """Condition: Ana and Bo have both posted."""
    board = env.get_app("Whiteboard")
    assert isinstance(board, Whiteboard)
    return {"Ana", "Bo"} <= {note["author"] for note in board.notes}


def summary_written(env: AbstractEnvironment) -> bool:
    """Milestone: the assistant posted a summary."""
    board = env.get_app("Whiteboard")
    assert isinstance(board, Whiteboard)
    return any(note["author"] == "assistant" for note in board.notes)
