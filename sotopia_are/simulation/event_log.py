"""The event log: every completed event, in the order (and so the time) it completed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sotopia_are.simulation.types import CompletedEvent

__all__ = ["EventLog"]


class EventLog:
    """An append-only list of :class:`CompletedEvent` with O(1) lookup by event id."""

    def __init__(self, events: Iterable[CompletedEvent] = ()) -> None:
        self._events: list[CompletedEvent] = []
        self._by_id: dict[str, CompletedEvent] = {}
        for event in events:
            self.put(event)

    def put(self, event: CompletedEvent) -> None:
        """Append ``event``."""
        self._events.append(event)
        self._by_id[event.event_id] = event

    def get(self, event_id: str) -> CompletedEvent | None:
        """The latest completed event with ``event_id``, if any."""
        return self._by_id.get(event_id)

    def list_view(self) -> list[CompletedEvent]:
        """A copy of the log as a list."""
        return list(self._events)

    def to_dict(self) -> list[dict[str, Any]]:
        """The log as JSON-ready dicts (see :meth:`CompletedEvent.to_dict`)."""
        return [event.to_dict() for event in self._events]

    @staticmethod
    def from_list_view(events: Iterable[CompletedEvent]) -> EventLog:
        """A log holding ``events`` in the given order."""
        return EventLog(events)

    def reset(self) -> None:
        """Empty the log."""
        self._events.clear()
        self._by_id.clear()

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[CompletedEvent]:
        return iter(self._events)

    def __getitem__(self, index: int) -> CompletedEvent:
        return self._events[index]
