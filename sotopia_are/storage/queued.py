"""`QueuedAppends`: stream appends made inside a running event loop, written together.

Hundreds of episodes in one event loop each append an event per turn; one round trip to
Redis per event costs more CPU (client and server) than the rest of the write. Appends
queued during one turn of the loop are written in one pipelined round trip when that turn
ends, so an event reaches Redis within a loop turn of completing (still followable live);
a process killed in between loses at most that turn's events of episodes still running,
which a resumed batch plays again. A failed write is kept per episode and raised to that
episode's next append or its end, never into the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

__all__ = ["QueuedAppend", "QueuedAppends"]


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
        # The loop whose turn end will write the queue (None: no write is scheduled). A
        # write made before (flush) leaves it scheduled: a second one scheduled then would
        # split the turn's appends into a round trip each.
        self._scheduled_on: asyncio.AbstractEventLoop | None = None

    def add(self, append: QueuedAppend) -> None:
        """Queue ``append`` for the end of this loop turn (written at once outside a running
        loop); an earlier append of its episode that failed is raised here, and this one
        dropped."""
        if self._failed:
            self.raise_failure(append.episode_id)
        self._queue.append(append)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            self.raise_failure(append.episode_id)
            return
        # A write scheduled on another loop (one that has stopped) may never run.
        if self._scheduled_on is not loop:
            self._scheduled_on = loop
            loop.call_soon(self._flush_at_turn_end, loop)

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

    def _flush_at_turn_end(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._scheduled_on is loop:
            self._scheduled_on = None
            self.flush()
