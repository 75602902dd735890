"""`EpisodeAppends`: completed events and model calls appended to an episode's streams.

The hot path of a running batch: each append is one EVALSHA (a Lua script, atomic with
the episode's counters), and appends queued in one turn of the event loop go in one
pipelined round trip (see :mod:`~sotopia_are.storage.queued`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, cast

import redis

from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.errors import EpisodeStateError
from sotopia_are.storage.events import event_entry
from sotopia_are.storage.keys import episode_calls_key, episode_events_key
from sotopia_are.storage.queued import QueuedAppend
from sotopia_are.storage.store.client import StoreClient
from sotopia_are.storage.store.entries import CallData, call_entries

__all__ = ["EpisodeAppends"]

# One round trip, atomic with the record's counters. Events go only to a running
# episode, calls to any existing one (the judge rates complete episodes); otherwise
# nothing is created or changed.
_APPEND_SCRIPT = """
local status = redis.call('HGET', KEYS[1], 'status')
if ARGV[2] == '1' then
  if status ~= 'running' then return redis.error_reply('NOT_RUNNING') end
  redis.call('HINCRBY', KEYS[1], 'event_count', 1)
elseif not status then
  return redis.error_reply('NOT_RUNNING')
end
redis.call('HSET', KEYS[1], 'updated_at', ARGV[1])
return redis.call('XADD', KEYS[2], '*', unpack(ARGV, 3))
"""
_APPEND_SHA = hashlib.sha1(_APPEND_SCRIPT.encode()).hexdigest()


class EpisodeAppends(StoreClient):
    """Appends to the episodes' event and call streams, one at a time or queued."""

    def append_event(self, episode_id: str, event: CompletedEvent | ExportedCompletedEvent) -> str:
        """Append a completed event to the running episode's stream; returns the entry id.

        Raises :class:`EpisodeStateError` (and writes nothing) if the episode is not running.
        """
        return self._append_entry(
            episode_id, episode_events_key(episode_id), event_entry(event), counts=True
        )

    def queue_event(self, episode_id: str, event: CompletedEvent | ExportedCompletedEvent) -> None:
        """:meth:`append_event`, for many episodes in one event loop: the append is written
        with the others queued in the same turn of the loop, in one round trip, when the
        turn ends (at once outside a running loop; before any other write of this store).

        An append the store refused (:class:`EpisodeStateError`, or
        :class:`StorageUnavailableError`) is raised by the episode's next ``queue_event``
        or its :meth:`finish_episode`.
        """
        self._queued.add(
            QueuedAppend(episode_id, episode_events_key(episode_id), event_entry(event), True)
        )

    def flush(self) -> None:
        """Write the appends :meth:`queue_event` queued, now (every other write of the
        store does this first); a refused one is raised as ``queue_event`` says."""
        self._queued.flush()

    def append_call(self, episode_id: str, call: CallData) -> str:
        """Append an accounted model call (an ``LLMCall``, or its
        ``model_dump(mode="json")``) to the episode's calls stream; returns the entry id.
        :class:`EpisodeStateError` (and nothing written) if there is no such episode;
        ``TypeError``/``ValueError`` (and nothing written) if ``call`` is not JSON."""
        (fields,) = call_entries([call])
        return self._append_entry(episode_id, episode_calls_key(episode_id), fields, counts=False)

    def _append_entry(
        self, episode_id: str, stream: str, fields: dict[str, str], *, counts: bool
    ) -> str:
        self._queued.flush()
        (entry,) = self._write_appends([QueuedAppend(episode_id, stream, fields, counts)])
        if isinstance(entry, BaseException):
            raise entry
        return entry

    def _write_appends(self, appends: Sequence[QueuedAppend]) -> list[str | BaseException]:
        """Write ``appends`` in one round trip; for each, its stream entry id or what
        refused it (a lost connection raises :class:`StorageUnavailableError`)."""
        with self._guard():
            replies = self._pipelined_appends(appends)
            if any(isinstance(r, redis.exceptions.NoScriptError) for r in replies):
                cast(Any, self.client).script_load(_APPEND_SCRIPT)  # the server lost it
                replies = self._pipelined_appends(appends)
        outcomes: list[str | BaseException] = []
        for append, reply in zip(appends, replies, strict=True):
            if isinstance(reply, redis.ResponseError) and "NOT_RUNNING" in str(reply):
                outcomes.append(_not_running(append.episode_id))
            elif isinstance(reply, redis.ResponseError) and (refused := self._refusal(reply)):
                outcomes.append(refused)
            else:
                outcomes.append(reply if isinstance(reply, BaseException) else str(reply))
        return outcomes

    def _pipelined_appends(self, appends: Sequence[QueuedAppend]) -> list[Any]:
        now = repr(self._clock())
        with self.client.pipeline(transaction=False) as pipe:
            for append in appends:
                pipe.evalsha(
                    _APPEND_SHA,
                    2,
                    EpisodeLog.redis_key(append.episode_id),
                    append.stream,
                    now,
                    "1" if append.counts else "0",
                    *(part for pair in append.fields.items() for part in pair),
                )
            replies: list[Any] = pipe.execute(raise_on_error=False)
        return replies


def _not_running(episode_id: str) -> EpisodeStateError:
    return EpisodeStateError(
        f"episode {episode_id} is not running (unknown, ended or interrupted); nothing was appended"
    )
