"""`EpisodeReading`: a stored episode read back — its record, events and model calls.

Reading first writes the appends queued before it, so an episode reads as it was
played up to now.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import Any, TypeVar

import redis

from sotopia_are.record import EpisodeRecord
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage.episode_layout import record_from_stored
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.errors import RecordNotFoundError
from sotopia_are.storage.events import EVENT_FIELD, decode_event
from sotopia_are.storage.exported import export_line
from sotopia_are.storage.keys import episode_calls_key, episode_events_key
from sotopia_are.storage.store.entries import (
    CALL_FIELD,
    decode_call,
    decode_entries,
    from_hash,
    read_stream,
    wrong_type,
)
from sotopia_are.storage.store.models import StoredModels
from sotopia_are.storage.store.round_trip import round_trip

__all__ = ["EpisodeReading"]

T = TypeVar("T")

RECORD_BATCH = 20
"""How many episodes :meth:`EpisodeReading.iter_records` reads in one round trip: enough
to make round trips rare, few enough that a batch of large records stays a few MB."""


class EpisodeReading(StoredModels):
    """Stored episodes as records, and their streams."""

    def load(self, episode_id: str) -> EpisodeRecord:
        """The stored episode as an :class:`~sotopia_are.record.EpisodeRecord` (an older
        layout is migrated on read). :class:`RecordNotFoundError` if there is none;
        :class:`UnreadableRecordError` naming the key if the record or one of its streams
        is not what the store wrote; ``ValueError`` if it was stored without a spec."""
        log = self.get_episode(episode_id)
        return record_from_stored(log, self.read_events(episode_id), self.read_calls(episode_id))

    def iter_records(
        self, episode_ids: Iterable[str], *, batch: int = RECORD_BATCH
    ) -> Iterator[EpisodeRecord]:
        """:meth:`load` of each of ``episode_ids`` in turn (the same records, the same
        errors, raised when that episode's turn comes), read ``batch`` episodes a round
        trip as they are consumed: at most one batch is held, whatever the number of ids.
        """
        self._queued.flush()
        pending = iter(episode_ids)
        while chunk := list(islice(pending, batch)):
            with self._guard():
                pipe = self.client.pipeline(transaction=False)
                for pk in chunk:
                    pipe.hgetall(EpisodeLog.redis_key(pk))
                    pipe.xrange(episode_events_key(pk))
                    pipe.xrange(episode_calls_key(pk))
                replies = pipe.execute(raise_on_error=False)
            for number, pk in enumerate(chunk):
                row, events, calls = replies[3 * number : 3 * number + 3]
                yield self._record_of_replies(pk, row, events, calls)

    def iter_export_lines(
        self, episode_ids: Iterable[str], *, batch: int = RECORD_BATCH
    ) -> Iterator[bytes]:
        """``record.to_json()`` (UTF-8) of each record :meth:`iter_records` gives: the same
        lines and the same errors, read ``batch`` episodes a round trip as they are
        consumed, the next batch read (in a thread) while this one is consumed, so that the
        server's work overlaps the caller's: at most two batches are held. A line is
        joined from the stored texts where the store keeps them in that form (see
        :mod:`~sotopia_are.storage.exported`; read undecoded), else the episode is read
        again and its record built."""
        self._queued.flush()
        pending = iter(episode_ids)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="export-read") as reader:
            chunk = list(islice(pending, batch))
            reading = reader.submit(self._export_replies, chunk)
            try:
                while chunk:
                    with self._guard():
                        replies = reading.result()
                    following = list(islice(pending, batch))
                    reading = reader.submit(self._export_replies, following)
                    yield from self._export_lines(chunk, replies)
                    chunk = following
            finally:
                reading.cancel()

    def _export_replies(self, chunk: list[str]) -> list[Any]:
        """The HGETALL and two XRANGE replies of each episode of ``chunk``, in one round
        trip, as the server sent them (undecoded, without redis-py's response callbacks:
        see :func:`~sotopia_are.storage.store.round_trip.round_trip`; errors as
        replies)."""
        commands: list[tuple[str, ...]] = []
        for pk in chunk:
            commands += (
                ("HGETALL", EpisodeLog.redis_key(pk)),
                ("XRANGE", episode_events_key(pk), "-", "+"),
                ("XRANGE", episode_calls_key(pk), "-", "+"),
            )
        return round_trip(self.client, commands, decode=False)

    def _export_lines(self, chunk: list[str], replies: list[Any]) -> Iterator[bytes]:
        for number, pk in enumerate(chunk):
            row, events, calls = replies[3 * number : 3 * number + 3]
            line = None
            if not any(isinstance(r, redis.ResponseError) for r in (row, events, calls)):
                line = export_line(row, events, calls, entry_names=(EVENT_FIELD, CALL_FIELD))
            yield line if line is not None else self.load(pk).to_json().encode()

    def _record_of_replies(self, pk: str, row: Any, events: Any, calls: Any) -> EpisodeRecord:
        """The record of episode ``pk`` from its pipelined HGETALL and XRANGE replies,
        raising what :meth:`load` raises for them."""
        key = EpisodeLog.redis_key(pk)
        replies = ((key, row, "hash"), (episode_events_key(pk), events, "stream"))
        for name, reply, kind in (*replies, (episode_calls_key(pk), calls, "stream")):
            if isinstance(reply, redis.ResponseError):
                raise wrong_type(self.client, name, kind, reply)
        if not row:
            raise RecordNotFoundError(f"no episode {pk!r} in {self.location}")
        return record_from_stored(
            from_hash(EpisodeLog, pk, row),
            decode_entries(episode_events_key(pk), events, EVENT_FIELD, decode_event),
            decode_entries(episode_calls_key(pk), calls, CALL_FIELD, decode_call),
        )

    def read_events(self, episode_id: str) -> list[ExportedCompletedEvent]:
        """The episode's completed events, in the order they completed;
        :class:`UnreadableRecordError` naming the stream if it is not one the store wrote."""
        return self._read_stream(episode_events_key(episode_id), EVENT_FIELD, decode_event)

    def follow_events(
        self, episode_id: str, *, block_ms: int = 1000
    ) -> Iterator[ExportedCompletedEvent]:
        """The episode's events as they are appended, until it is no longer running."""
        stream = episode_events_key(episode_id)
        last = "0-0"
        while True:
            with self._guard():
                replies = self.client.xread({stream: last}, block=block_ms, count=100)
            for _, entries in replies:
                for entry_id, fields in entries:
                    last = entry_id
                    yield decode_event(fields[EVENT_FIELD])
            if not replies and self.get_episode(episode_id).status is not EpisodeStatus.RUNNING:
                with self._guard():
                    rest = self.client.xrange(stream, min=f"({last}")
                for _, fields in rest:
                    yield decode_event(fields[EVENT_FIELD])
                return

    def read_calls(self, episode_id: str) -> list[dict[str, Any]]:
        """The episode's model call records, in the order they were appended;
        :class:`UnreadableRecordError` naming the stream if it is not one the store wrote."""
        return self._read_stream(episode_calls_key(episode_id), CALL_FIELD, decode_call)

    def _read_stream(self, key: str, field: str, decode: Callable[[str], T]) -> list[T]:
        self._queued.flush()
        with self._guard():
            return read_stream(self.client, key, field, decode)
