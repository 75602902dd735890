"""The event queue: events in ``(time, priority, arrival)`` order.

Events due at the same time run by priority — ENV, USER and AGENT events (0), then
condition checks (1), validations (2) and stop events (3) — and, within a priority, in the
order they entered the queue. So checks at a time see every action of that time.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque

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


# An entry is ``(due, key)``: the key orders the events due at one time (priority, then
# arrival) and its lowest bit is set for an entry that does not keep the run alive.
_PRIORITY_SHIFT = 48
_FIRST_PRIORITY = (EventType.ENV, EventType.USER, EventType.AGENT)


class EventQueue:
    """Events waiting for their time; push and pop are O(log n), and O(1) for an event
    due no earlier than every other queued one.

    An entry may be marked as not keeping the run alive (a check that would poll forever);
    :meth:`has_live_events` tells whether anything else is waiting. Such entries are the
    ones counted, being rare: queuing and popping any other costs no count.

    Entries come out in ``(due, key)`` order from two sources merged at their heads: a
    *run* (a deque of entries each later than the one before: what an event due after
    everything queued joins, as a scenario's events scheduled in time order do, or the
    next step of a chain) and a heap for the rest. Entries are tuples of two numbers,
    which the cyclic garbage collector stops tracking, so a long queue costs it nothing.
    """

    __slots__ = ("_heap", "_heap_events", "_passive", "_run", "_run_events", "_seq")

    def __init__(self) -> None:
        self._run: deque[tuple[float, int]] = deque()
        self._run_events: deque[AbstractEvent] = deque()
        self._heap: list[tuple[float, int]] = []
        self._heap_events: dict[int, AbstractEvent] = {}
        self._seq = itertools.count(2, 2)
        # How many queued entries do not keep the run alive.
        self._passive = 0

    def put(self, event: AbstractEvent, due: float, keeps_alive: bool = True) -> None:
        """Queue ``event`` to run at simulated time ``due``."""
        event_type = event.event_type
        # Identity tests first: an enum's hash is a Python-level call.
        if event_type in _FIRST_PRIORITY:
            key = next(self._seq)
        else:
            key = (PRIORITY[event_type] << _PRIORITY_SHIFT) + next(self._seq)
        if not keeps_alive:
            key += 1
            self._passive += 1
        entry = (due, key)
        run = self._run
        if not run or run[-1] < entry:
            run.append(entry)
            self._run_events.append(event)
        else:
            heapq.heappush(self._heap, entry)
            self._heap_events[key] = event

    def _head(self) -> tuple[float, int] | None:
        heap = self._heap
        run = self._run
        if heap and (not run or heap[0] < run[0]):
            return heap[0]
        return run[0] if run else None

    def peek_time(self) -> float | None:
        """When the next event is due (None if the queue is empty)."""
        # _head() inlined: the kernel asks this before a tick that a timeout may open.
        heap = self._heap
        run = self._run
        if heap and (not run or heap[0] < run[0]):
            return heap[0][0]
        return run[0][0] if run else None

    def peek_time_if_live(self) -> float | None:
        """:meth:`peek_time` if a queued event keeps the run alive, else None (the
        kernel's loop asks only before a tick that a reminder app opens; else it pops the
        tick's first event at once with ``pop_due(end, live_only=True)``)."""
        return self.peek_time() if self.has_live_events() else None

    def peek(self) -> tuple[float, AbstractEvent] | None:
        """The next ``(due, event)`` without removing it (None if the queue is empty)."""
        head = self._head()
        if head is None:
            return None
        if self._run and head is self._run[0]:
            return head[0], self._run_events[0]
        return head[0], self._heap_events[head[1]]

    def pop(self) -> tuple[float, AbstractEvent]:
        """Remove and return the next ``(due, event)``; IndexError if empty."""
        popped = self.pop_due(float("inf"))
        if popped is None:
            raise IndexError("pop from an empty event queue")
        return popped

    def pop_due(self, now: float, live_only: bool = False) -> tuple[float, AbstractEvent] | None:
        """Remove and return the next ``(due, event)`` if it is due at or before ``now``;
        with ``live_only``, only if a queued event keeps the run alive (the kernel's loop
        pops the first event of a tick so, without a peek first)."""
        heap = self._heap
        run = self._run
        if live_only and self._passive and len(run) + len(heap) <= self._passive:
            return None
        if heap and (not run or heap[0] < run[0]):
            due, key = heap[0]
            if due > now:
                return None
            heapq.heappop(heap)
            event = self._heap_events.pop(key)
        elif run:
            due, key = run[0]
            if due > now:
                return None
            run.popleft()
            event = self._run_events.popleft()
        else:
            return None
        if key & 1:
            self._passive -= 1
        return due, event

    def has_live_events(self) -> bool:
        """Whether any queued event keeps the run alive."""
        return len(self._run) + len(self._heap) > self._passive

    def list_view(self) -> list[tuple[float, AbstractEvent]]:
        """The queued ``(due, event)`` pairs in run order (sorts a copy: for inspection)."""
        entries = [
            (due, key, event) for (due, key), event in zip(self._run, self._run_events, strict=True)
        ]
        entries += [(due, key, self._heap_events[key]) for due, key in self._heap]
        return [(due, event) for due, _, event in sorted(entries, key=lambda e: e[:2])]

    def clear(self) -> None:
        """Drop every queued event."""
        self._run.clear()
        self._run_events.clear()
        self._heap.clear()
        self._heap_events.clear()
        self._passive = 0

    def __len__(self) -> int:
        return len(self._run) + len(self._heap)
