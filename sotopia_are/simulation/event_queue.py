"""The event queue: a heap of ``(time, priority, seq, event)``.

Events due at the same time run by priority — ENV, USER and AGENT events (0), then
condition checks (1), validations (2) and stop events (3) — and, within a priority, in the
order they entered the queue. So checks at a time see every action of that time.
"""

from __future__ import annotations

import heapq
import itertools

from sotopia_are.simulation.types import AbstractEvent, EventType

__all__ = ["PRIORITY", "EventQueue"]

PRIORITY: dict[EventType, int] = {
    EventType.ENV: 0,
    EventType.USER: 0,
    EventType.AGENT: 0,
    EventType.CONDITION: 1,
    EventType.VALIDATION: 2,
    EventType.STOP: 3,
}


class EventQueue:
    """Events waiting for their time; push and pop are O(log n).

    An entry may be marked as not keeping the run alive (a check that would poll forever);
    :meth:`has_live_events` tells whether anything else is waiting.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, AbstractEvent, bool]] = []
        self._seq = itertools.count()
        self._live = 0

    def put(self, event: AbstractEvent, due: float, keeps_alive: bool = True) -> None:
        """Queue ``event`` to run at simulated time ``due``."""
        entry = (due, PRIORITY[event.event_type], next(self._seq), event, keeps_alive)
        heapq.heappush(self._heap, entry)
        self._live += keeps_alive

    def peek_time(self) -> float | None:
        """When the next event is due (None if the queue is empty)."""
        return self._heap[0][0] if self._heap else None

    def peek(self) -> tuple[float, AbstractEvent] | None:
        """The next ``(due, event)`` without removing it (None if the queue is empty)."""
        return (self._heap[0][0], self._heap[0][3]) if self._heap else None

    def pop(self) -> tuple[float, AbstractEvent]:
        """Remove and return the next ``(due, event)``; IndexError if empty."""
        due, _, _, event, keeps_alive = heapq.heappop(self._heap)
        self._live -= keeps_alive
        return due, event

    def pop_due(self, now: float) -> tuple[float, AbstractEvent] | None:
        """Remove and return the next ``(due, event)`` if it is due at or before ``now``."""
        heap = self._heap
        if not heap or heap[0][0] > now:
            return None
        entry = heapq.heappop(heap)
        self._live -= entry[4]
        return entry[0], entry[3]

    def has_live_events(self) -> bool:
        """Whether any queued event keeps the run alive."""
        return self._live > 0

    def list_view(self) -> list[tuple[float, AbstractEvent]]:
        """The queued ``(due, event)`` pairs in run order (sorts a copy: for inspection)."""
        return [(entry[0], entry[3]) for entry in sorted(self._heap, key=lambda e: e[:3])]

    def clear(self) -> None:
        """Drop every queued event."""
        self._heap.clear()
        self._live = 0

    def __len__(self) -> int:
        return len(self._heap)
