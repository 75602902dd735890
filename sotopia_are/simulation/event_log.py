"""The event log: every completed event, in the order (and so the time) it completed.

The kernel logs most events it runs as *pending* records: what the record is made of
(the event, the time it ran, its return value), kept in a flat list and turned into its
:class:`CompletedEvent` the first time anything reads the log. A run thus makes no object
per event that the cyclic garbage collector has to walk, which is what keeps the kernel's
rate flat from a thousand events to a million; a reader sees the same records, each made
once (the same object on every read).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any, overload

from sotopia_are.simulation.actions import EventMetadata
from sotopia_are.simulation.events import AbstractEvent, CompletedEvent, Event

__all__ = ["EventLog"]

# A pending record in the flat list: its index in the log, the event that ran, the time it
# ran, its return value, and the parts of the event its record copies (the event may be
# changed after it ran; its record must not be).
_STRIDE = 8


class EventLog:
    """An append-only list of :class:`CompletedEvent` with O(1) lookup by event id.

    Thread-safe for one writer (the environment, under its lock) and any number of
    readers: the writer appends without a lock; readers make the pending records under
    the log's own lock.
    """

    def __init__(self, events: Iterable[CompletedEvent] = ()) -> None:
        # None marks a pending record, made from ``_pending`` on the first read.
        self._events: list[CompletedEvent | None] = []
        # Index by id of the first ``_indexed`` records, brought up to date by get().
        self._by_id: dict[str, int] = {}
        self._indexed = 0
        self._pending: list[Any] = []
        self._making = threading.Lock()
        for event in events:
            self.put(event)

    def put(self, event: CompletedEvent) -> None:
        """Append ``event``."""
        self._events.append(event)

    def put_ran(self, event: Event, event_time: float, return_value: Any) -> None:
        """Append the record of ``event``, which ran at ``event_time`` and returned
        ``return_value``: on the first read it is ``CompletedEvent(event_type, event_time,
        event_id, a copy of the dependencies, event_relative_time, action, metadata =
        EventMetadata(return_value))``, taken from ``event`` as it is now."""
        event_id = event.event_id
        if not event_id:
            # Its record would draw a fresh id when made: draw it now, in run order.
            self.put(_record(event, event_time, return_value))
            return
        index = len(self._events)
        parents = event.dependencies
        dependencies: AbstractEvent | list[AbstractEvent] | None = None
        if len(parents) == 1:
            # One dependency (a chain) is kept as itself: a copy of the list would be one
            # more object for the collector to walk.
            dependencies = parents[0]
        elif parents:
            dependencies = list(parents)
        # The entry goes in before its slot, so a reader that sees the slot finds the
        # entry (each of these is atomic); one extend: cheaper than eight appends.
        self._pending.extend(
            (
                index,
                event,
                event_time,
                return_value,
                event_id,
                event.event_type,
                event.event_relative_time,
                dependencies,
            )
        )
        self._events.append(None)

    def _made(self) -> int:
        """Make every pending record below the current length; that length."""
        count = len(self._events)
        if not self._pending:
            return count
        with self._making:
            pending = self._pending
            events = self._events
            end = 0
            # Entries of slots at or past ``count`` belong to a later read.
            while end < len(pending) and pending[end] < count:
                index, event, event_time, value, event_id, event_type, relative, dependencies = (
                    pending[end : end + _STRIDE]
                )
                events[index] = CompletedEvent(
                    event_type=event_type,
                    event_time=event_time,
                    event_id=event_id,
                    dependencies=_copied(dependencies),
                    event_relative_time=relative,
                    action=event.action,
                    metadata=EventMetadata(return_value=value),
                )
                end += _STRIDE
            del pending[:end]
        return count

    def get(self, event_id: str) -> CompletedEvent | None:
        """The latest completed event with ``event_id``, if any."""
        count = self._made()
        if self._indexed < count:
            with self._making:
                by_id = self._by_id
                events = self._events
                for position in range(self._indexed, count):
                    by_id[events[position].event_id] = position  # type: ignore[union-attr]
                self._indexed = max(self._indexed, count)
        index = self._by_id.get(event_id)
        return None if index is None else self._events[index]

    def list_view(self) -> list[CompletedEvent]:
        """A copy of the log as a list."""
        return self._snapshot()

    def _snapshot(self) -> list[CompletedEvent]:
        count = self._made()
        return self._events[:count]  # type: ignore[return-value]  # all made below count

    def to_dict(self) -> list[dict[str, Any]]:
        """The log as JSON-ready dicts (see :meth:`CompletedEvent.to_dict`)."""
        return [event.to_dict() for event in self._snapshot()]

    @staticmethod
    def from_list_view(events: Iterable[CompletedEvent]) -> EventLog:
        """A log holding ``events`` in the given order."""
        return EventLog(events)

    def reset(self) -> None:
        """Empty the log."""
        with self._making:
            self._events.clear()
            self._by_id.clear()
            self._indexed = 0
            self._pending.clear()

    def __getstate__(self) -> dict[str, Any]:
        # Pickled or copied as its records (a lock cannot be): every pending one made.
        return {"events": self._snapshot()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["events"])  # type: ignore[misc]

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[CompletedEvent]:
        # By index, not over a copy: events logged while iterating are seen, as with a list.
        events = self._events
        index = 0
        while index < len(events):
            event = events[index]
            if event is None:
                self._made()
                event = events[index]
            yield event  # type: ignore[misc]  # made by _made
            index += 1

    @overload
    def __getitem__(self, index: int) -> CompletedEvent: ...

    @overload
    def __getitem__(self, index: slice) -> list[CompletedEvent]: ...

    def __getitem__(self, index: int | slice) -> CompletedEvent | list[CompletedEvent]:
        count = self._made()
        if isinstance(index, slice):
            events = self._events
            return [events[i] for i in range(*index.indices(count))]  # type: ignore[misc]
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("event log index out of range")
        return self._events[index]  # type: ignore[return-value]


def _copied(dependencies: AbstractEvent | list[AbstractEvent] | None) -> list[AbstractEvent]:
    """The dependency list of a record, from what :meth:`EventLog.put_ran` kept."""
    if dependencies is None:
        return []
    return dependencies if isinstance(dependencies, list) else [dependencies]


def _record(event: Event, event_time: float, return_value: Any) -> CompletedEvent:
    """The record :meth:`EventLog.put_ran` describes, made now."""
    return CompletedEvent(
        event_type=event.event_type,
        event_time=event_time,
        event_id=event.event_id,
        dependencies=list(event.dependencies),
        event_relative_time=event.event_relative_time,
        action=event.action,
        metadata=EventMetadata(return_value=return_value),
    )
