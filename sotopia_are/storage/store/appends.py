"""`EpisodeAppends`: completed events and model calls appended to an episode's streams.

The hot path of a running batch: the appends queued in a short window of the event loop
(see :mod:`~sotopia_are.storage.queued`) go in one EVALSHA, a Lua script that makes each
append atomic with its episode's counters. An append whose keys are not what the store
writes there (another type, a count that is no integer) is left to one EVALSHA of its own
(with its episode's later ones, in order), which refuses it as an append always did.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
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
from sotopia_are.storage.store.entries import CallData, call_entries, entry_args

__all__ = ["EpisodeAppends"]

# One round trip, atomic with the record's counters. Events go only to a running
# episode, calls to any existing one (the judge rates complete episodes); otherwise
# nothing is created or changed.
_APPEND_SCRIPT = """
local status = redis.call('HGET', KEYS[1], 'status')
if ARGV[2] == '1' then
  if status ~= 'running' then return redis.error_reply('NOT_RUNNING') end
  redis.call('HINCRBY', KEYS[1], 'event_count', '1')
elseif not status then
  return redis.error_reply('NOT_RUNNING')
end
redis.call('HSET', KEYS[1], 'updated_at', ARGV[1])
return redis.call('XADD', KEYS[2], '*', unpack(ARGV, 3))
"""
_APPEND_SHA = hashlib.sha1(_APPEND_SCRIPT.encode()).hexdigest()

# Many appends in one script: KEYS are each append's hash and stream, ARGV the time, then
# each append's entry as ``entries.entry_args`` sends it, its first text prefixed with
# '1' if it counts as an event ('0' if not): how many texts it has and those texts
# (field, value, field, value...), or '=' and its payload alone (the previous entry's
# fields, the payload first). Each append is the one above, given keys the store wrote:
# for each, its entry id, -1 (not running) or 0 (left to the script above, as are its
# episode's later appends: a key of another type, or an event count HINCRBY would
# refuse).
_APPENDS_SCRIPT = """
-- Globals and library functions read once into locals: a global is a table lookup by
-- name each time it is read, and an append read about twenty.
local KEYS, ARGV, redis_call, redis_pcall = KEYS, ARGV, redis.call, redis.pcall
local byte, char, find, match, sub = string.byte, string.char, string.find, string.match, string.sub
local now = ARGV[1]
local at = 2
local out, left, entry = {}, {}, {}
for i = 1, #KEYS / 2 do
  local key, stream = KEYS[2 * i - 1], KEYS[2 * i]
  local head = ARGV[at]
  -- (Lua compares strings by reference: the usual heads cost no function call to read.)
  local counts = head == '1=' or (head ~= '0=' and byte(head) == 49)
  if head == '1=' or head == '0=' then
    entry[2] = ARGV[at + 1]
    at = at + 2
  else
    entry = {}
    for j = 1, tonumber(sub(head, 2)) do entry[j] = ARGV[at + j] end
    at = at + 1 + #entry
  end
  out[i] = 0
  if not left[key] then
    -- No TYPE calls: a hash or stream of another type shows as HMGET's or XADD's
    -- WRONGTYPE error (XADD comes before this append's other writes, so nothing is written
    -- then); any other error is the script's reply, as redis.call would make it.
    local read = redis_pcall('HMGET', key, 'status', 'event_count')
    local failed = read['err']
    if failed and not find(failed, 'WRONGTYPE', 1, true) then return read end
    local status, count = false, false
    if not failed then status, count = read[1], read[2] end
    if failed or (counts and status == 'running' and count and not (count == '0'
        or (#count < 19 and match(count, '^%-?[1-9]%d*$')))) then
      left[key] = true
    elseif (counts and status ~= 'running') or not status then
      out[i] = -1
    else
      local id = redis_pcall('XADD', stream, '*', unpack(entry))
      if type(id) == 'table' and id['err'] then
        if not find(id['err'], 'WRONGTYPE', 1, true) then return id end
        left[key] = true
      else
        if not counts then
          redis_call('HSET', key, 'updated_at', now)
        elseif not count or #count < 14 then
          -- The count checked above, one more, as HINCRBY would write it, in the same HSET
          -- as the time: one write, not two. A last digit below 9 of a count of 0 or more
          -- counts up (no number conversion); any other goes through a Lua number (exact,
          -- and written without an exponent, below 10^13).
          if not count then
            count = '1'
          else
            local last = byte(count, -1)
            if last < 57 and byte(count) ~= 45 then
              count = sub(count, 1, -2) .. char(last + 1)
            else
              count = tostring(tonumber(count) + 1)
            end
          end
          redis_call('HSET', key, 'event_count', count, 'updated_at', now)
        else
          redis_call('HINCRBY', key, 'event_count', '1')
          redis_call('HSET', key, 'updated_at', now)
        end
        out[i] = id
      end
    end
  end
end
return out
"""
_APPENDS_SHA = hashlib.sha1(_APPENDS_SCRIPT.encode()).hexdigest()


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
        with the others queued meanwhile, in one round trip, at the end of the window the
        first of them opened (:data:`~sotopia_are.storage.queued.FLUSH_WINDOW_S`), or once
        :data:`~sotopia_are.storage.queued.FLUSH_MAX_QUEUED` wait (at once outside a
        running loop; before any other write of this store, but for an episode's
        :meth:`finish_episode`, which writes its own episode's in its round trip and leaves
        the others' to the window's end; and by :meth:`close`).

        An append the store refused (:class:`EpisodeStateError`, or
        :class:`StorageUnavailableError`) is raised by the episode's next ``queue_event``
        or its :meth:`finish_episode`.
        """
        # QueuedAppend(...) without its Python __new__ (a named tuple's is one), per event.
        self._queued.add(
            _new_tuple(
                QueuedAppend, (episode_id, episode_events_key(episode_id), event_entry(event), True)
            )
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
        self, episode_id: str, stream: str, fields: Mapping[str, str | bytes], *, counts: bool
    ) -> str:
        self._queued.flush()
        (entry,) = self._write_appends([QueuedAppend(episode_id, stream, fields, counts)])
        if isinstance(entry, BaseException):
            raise entry
        return entry

    def _write_appends(self, appends: Sequence[QueuedAppend]) -> list[str | BaseException]:
        """Write ``appends`` in one round trip (and one more for any left to the script of
        one append); for each, its stream entry id or what refused it (a lost connection
        raises :class:`StorageUnavailableError`)."""
        now = repr(self._clock())
        keys: list[str] = []
        args: list[str | bytes] = [now]
        previous = None
        for append in appends:
            keys += (_hash_key(append.episode_id), append.stream)
            # Whether it counts goes in the entry's first text: one argument less to send.
            args += entry_args(append.fields, previous, "1" if append.counts else "0")
            previous = append.fields
        with self._guard():
            replies = self._evalsha(_APPENDS_SHA, _APPENDS_SCRIPT, keys, args)
            if 0 in replies:
                left = [a for a, reply in zip(appends, replies, strict=True) if reply == 0]
                alone = iter(self._appends_alone(left, now))
                replies = [next(alone) if reply == 0 else reply for reply in replies]
        outcomes: list[str | BaseException] = []
        for append, reply in zip(appends, replies, strict=True):
            if type(reply) is str:  # its entry id
                outcomes.append(reply)
            elif reply == -1 or (
                isinstance(reply, redis.ResponseError) and "NOT_RUNNING" in str(reply)
            ):
                outcomes.append(_not_running(append.episode_id))
            elif isinstance(reply, redis.ResponseError) and (refused := self._refusal(reply)):
                outcomes.append(refused)
            else:
                outcomes.append(reply if isinstance(reply, BaseException) else str(reply))
        return outcomes

    def _appends_alone(self, appends: Sequence[QueuedAppend], now: str) -> list[Any]:
        """Each of ``appends`` by the script of one append, pipelined: its entry id or its
        error."""
        replies = self._pipelined_appends(appends, now)
        if any(isinstance(r, redis.exceptions.NoScriptError) for r in replies):
            cast(Any, self.client).script_load(_APPEND_SCRIPT)  # the server lost it
            replies = self._pipelined_appends(appends, now)
        return replies

    def _pipelined_appends(self, appends: Sequence[QueuedAppend], now: str) -> list[Any]:
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


_new_tuple = tuple.__new__


@functools.lru_cache(maxsize=4096)
def _hash_key(episode_id: str) -> str:
    """``EpisodeLog.redis_key(episode_id)``, made once per episode of the last few
    thousand (redis-om builds it anew each time; an episode appends 20 events or more)."""
    return EpisodeLog.redis_key(episode_id)


def _not_running(episode_id: str) -> EpisodeStateError:
    return EpisodeStateError(
        f"episode {episode_id} is not running (unknown, ended or interrupted); nothing was appended"
    )
