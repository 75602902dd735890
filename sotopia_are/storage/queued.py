"""`QueuedAppends`: stream appends made inside a running event loop, written together.

Hundreds of episodes in one event loop each append an event per turn; one round trip to
Redis per event costs more CPU (client and server) than the rest of the write, and so
does one round trip per turn of the loop, when a turn completes only a few events. Appends
queued inside a running loop are written together, in one pipelined round trip,
:data:`FLUSH_WINDOW_S` after the first of them was queued (or at once when
:data:`FLUSH_MAX_QUEUED` are waiting, and before any other write of the store), so an
event reaches Redis within that window of completing (still followable live). A process
killed outright loses at most the last window's events of episodes still running, which
a resumed batch plays again; an episode's end writes its own queued events, and closing
the store writes the rest. A failed write is kept per episode and raised to that
episode's next append or its end, never into the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

__all__ = ["FLUSH_MAX_QUEUED", "FLUSH_WINDOW_S", "QueuedAppend", "QueuedAppends"]

FLUSH_WINDOW_S = 0.05
"""Seconds queued appends wait, inside a running loop, for others to share their round
trip (measured in docs/benchmarks.md, "Per-call work, round 13: the store's appends
window")."""

FLUSH_MAX_QUEUED = 256
"""Queued appends written at once, without waiting for the window's end: a bound on the
queue and on one script's time in Redis (a few milliseconds), which serves no one else
meanwhile."""


class QueuedAppend(NamedTuple):
    """One append waiting for its round trip: the entry ``fields`` to ``stream``
    (``counts``: an event, counted in the episode's ``event_count``). (A named tuple: made
    for every event, in half the time of a frozen dataclass.)"""

    episode_id: str
    stream: str
    fields: Mapping[str, str | bytes]
    counts: bool


WriteAppends = Callable[[Sequence[QueuedAppend]], Sequence[object]]
"""Writes appends in one round trip; for each, what was written (its stream entry id) or
the error that refused it."""


class QueuedAppends:
    """The appends queued on one store; ``write`` does the round trip. Used from one
    thread, as the store is."""

    def __init__(self, write: WriteAppends) -> None:
        self._write = write
        self._queue: list[QueuedAppend] = []
        self._failed: dict[str, BaseException] = {}
        # The loop whose timer will write the queue (None: no write is scheduled). A write
        # made before it (flush) leaves it scheduled: the appends queued after that go
        # out at the same window's end, with no second timer.
        self._scheduled_on: asyncio.AbstractEventLoop | None = None

    def add(self, append: QueuedAppend) -> None:
        """Queue ``append`` for the end of the window (:data:`FLUSH_WINDOW_S`; written at once
        outside a running loop, or as the :data:`FLUSH_MAX_QUEUED`-th waiting); an earlier
        append of its episode that failed is raised here, and this one dropped."""
        if self._failed:
            self.raise_failure(append.episode_id)
        self._queue.append(append)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            self.raise_failure(append.episode_id)
            return
        if len(self._queue) >= FLUSH_MAX_QUEUED:
            self.flush()
        # A write scheduled on another loop (one that has stopped) may never run.
        elif self._scheduled_on is not loop:
            self._scheduled_on = loop
            loop.call_later(FLUSH_WINDOW_S, self._flush_at_window_end, loop)

    def flush(self) -> None:
        """Write every queued append now, keeping each failure for its episode."""
        if not self._queue:
            return
        queued, self._queue = self._queue, []
        try:
            outcomes: Sequence[object] = self._write(queued)
        except Exception as error:  # the round trip itself failed: every append did
            outcomes = [error] * len(queued)
        for append, outcome in zip(queued, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                self._failed.setdefault(append.episode_id, outcome)

    def take(self, episode_id: str) -> list[QueuedAppend]:
        """Take ``episode_id``'s queued appends out of the queue (to be written by the
        caller, in its own round trip); none while an earlier failure of it is kept (that
        is raised first, the queue written the usual way)."""
        if not self._queue or episode_id in self._failed:
            return []
        taken = [append for append in self._queue if append.episode_id == episode_id]
        if taken:
            self._queue = [append for append in self._queue if append.episode_id != episode_id]
        return taken

    def put_back(self, appends: Sequence[QueuedAppend]) -> None:
        """Queue again ``appends`` that :meth:`take` took and the caller did not write
        (ahead of the others: appends of different episodes touch different keys)."""
        self._queue[:0] = appends

    def raise_failure(self, episode_id: str) -> None:
        """Raise (once) the error that refused an append of ``episode_id``, if any."""
        error = self._failed.pop(episode_id, None)
        if error is not None:
            raise error

    def forget(self, episode_id: str) -> None:
        """Drop what is known of ``episode_id``'s failed appends (it starts afresh)."""
        self._failed.pop(episode_id, None)

    def _flush_at_window_end(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._scheduled_on is loop:
            self._scheduled_on = None
            self.flush()
