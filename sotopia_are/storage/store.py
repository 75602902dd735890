"""`EpisodeStore`: profiles and episodes in Redis, on any Redis ≥ 6.2 without modules.

Every write that touches more than one key runs in one MULTI/EXEC transaction (guarded
by WATCH where it depends on what is stored), so a record and its index entries never
disagree and an interrupted write leaves nothing half-written. Listing and filtering
use the store's own index sets (see :mod:`.keys`), never RediSearch.

An episode's life: :meth:`EpisodeStore.start_episode` (status ``running``),
:meth:`~EpisodeStore.append_event` for each completed event as it happens, then
:meth:`~EpisodeStore.finish_episode` (``complete`` or ``failed``, with usage and the
run's model calls, in one transaction), and later :meth:`~EpisodeStore.save_evaluation`
(scores, and the judge's calls). A run that dies in between leaves a readable
``running`` episode with the events it had; :meth:`~EpisodeStore.mark_interrupted` turns
such leftovers into ``incomplete`` ones, and :meth:`~EpisodeStore.completed_episode_ids`
tells a resumed batch what to skip.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import redis
from pydantic import JsonValue, ValidationError

from sotopia_are import SotopiaAreError
from sotopia_are.llm import LLMCall
from sotopia_are.record import EpisodeRecord, EpisodeSummary, Verdict
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage.embedded import EmbeddedRedis
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.errors import (
    EpisodeExistsError,
    EpisodeStateError,
    RecordNotFoundError,
    StorageConflictError,
    StorageRefusedError,
    StorageUnavailableError,
    UnreadableRecordError,
    already_played,
)
from sotopia_are.storage.events import EVENT_FIELD, decode_event, encode_event
from sotopia_are.storage.fields import dumps_canonical
from sotopia_are.storage.keys import (
    EPISODES_BY_TIME,
    episode_calls_key,
    episode_events_key,
    episode_index_key,
)
from sotopia_are.storage.queued import QueuedAppend, QueuedAppends
from sotopia_are.storage.record import StoredModel
from sotopia_are.storage.records import (
    episode_log_of,
    index_fields,
    record_from_stored,
    summary_of,
    usage_summary,
)

__all__ = ["CALL_FIELD", "WRITE_ATTEMPTS", "CallData", "EpisodeStore", "OnUnreadable"]

R = TypeVar("R", bound=StoredModel)

CallData = Mapping[str, Any] | LLMCall
"""A model call record as the store takes it: an ``LLMCall``, or its JSON data
(``LLMCall.model_dump(mode="json")``)."""
T = TypeVar("T")

CALL_FIELD = "call"
"""The field of a calls-stream entry holding the call record's JSON."""

_SCAN_BATCH = 500

_log = logging.getLogger(__name__)

OnUnreadable = Callable[[UnreadableRecordError], None]
"""What listing calls with each key it skips because it is not what the store wrote."""


def _log_unreadable(error: UnreadableRecordError) -> None:
    """The default report of a skipped key: listing should not be silent about it."""
    _log.warning("skipped %s: %s", error.key, error.reason)


WRITE_ATTEMPTS = 50
"""How often a guarded write is tried before :class:`StorageConflictError`: a WATCHed key
changing under every attempt means writers are fighting over one record, which waiting
longer would not fix."""

# One round trip, atomic with the record's counters. Events go only to a running
# episode, calls to any existing one (the judge rates complete episodes); otherwise
# nothing is created or changed.
_APPEND_SCRIPT = """
local status = redis.call('HGET', KEYS[1], 'status')
if ARGV[4] == '1' then
  if status ~= 'running' then return redis.error_reply('NOT_RUNNING') end
  redis.call('HINCRBY', KEYS[1], 'event_count', 1)
elseif not status then
  return redis.error_reply('NOT_RUNNING')
end
redis.call('HSET', KEYS[1], 'updated_at', ARGV[3])
return redis.call('XADD', KEYS[2], '*', ARGV[1], ARGV[2])
"""
_APPEND_SHA = hashlib.sha1(_APPEND_SCRIPT.encode()).hexdigest()


class EpisodeStore:
    """Profiles and episodes on one Redis connection; build it with
    :func:`~sotopia_are.storage.connect`.

    ``location`` says where the data is, for messages (never a password).
    Connection failures during any call raise :class:`StorageUnavailableError`.
    """

    def __init__(
        self,
        client: redis.Redis[str],
        *,
        location: str,
        embedded: EmbeddedRedis | None = None,
        url: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.location = location
        self.embedded = embedded
        self._url = url
        self._clock = clock
        self._queued = QueuedAppends(self._write_appends)

    # -- connection -------------------------------------------------------------------

    @property
    def url(self) -> str | None:
        """A URL another process can connect to the same server with (the embedded
        server's unix socket, or the server's URL); None for a store built on a bare
        client."""
        if self.embedded is not None:
            return f"unix://{self.embedded.socket_path}"
        return self._url

    def ping(self) -> None:
        """Check the server answers; :class:`StorageUnavailableError` naming the fix if not."""
        with self._guard():
            self.client.ping()

    def close(self) -> None:
        """Write the queued appends, release the connection (and stop the embedded server
        if this was its last user)."""
        try:
            self._queued.flush()
        finally:
            self.client.close()
        if self.embedded is not None:
            self.embedded.stop()

    def __enter__(self) -> EpisodeStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except redis.AuthenticationError as error:  # a ConnectionError: catch it first
            raise StorageUnavailableError(
                f"{self.location} refused the credentials: {error}"
            ) from error
        except (redis.ConnectionError, redis.TimeoutError) as error:
            raise StorageUnavailableError(
                f"lost the connection to {self.location}: {error}. Fix: check that the server "
                "is running, then resume (completed episodes are kept and skipped)."
            ) from error
        except redis.ResponseError as error:
            refused = self._refusal(error)
            if refused is None:
                raise
            raise refused from error

    def _refusal(self, error: BaseException) -> StorageRefusedError | None:
        """The :class:`StorageRefusedError` a server's refusal to write (``error``) is, or
        None for any other reply."""
        said = str(error)
        if "maxmemory" in said:  # redis-py names it OutOfMemoryError (not in its stubs)
            return StorageRefusedError(
                f"{self.location} refuses writes: it is at its memory limit (maxmemory) and "
                "evicts nothing. Fix: free memory there (delete episodes no longer needed), "
                "raise its limit (CONFIG SET maxmemory), or use another server; then resume "
                "(completed episodes are kept and skipped).",
                "memory",
            )
        if isinstance(error, redis.exceptions.ReadOnlyError) or "READONLY" in said:
            return StorageRefusedError(
                f"{self.location} refuses writes: it is a read-only replica. Fix: point "
                "--redis-url (or REDIS_OM_URL) at the primary server, then resume.",
                "read-only",
            )
        if "MISCONF" in said:
            detail = said.split("MISCONF", 1)[1].strip()
            return StorageRefusedError(
                f"{self.location} refuses writes: it cannot save to disk (disk full or not "
                f"writable; it said: {detail}). Fix: free disk space or repair its data "
                "directory (see the server's log), then resume.",
                "disk",
            )
        return None

    def _watched(self, keys: list[str], body: Callable[[Any], T]) -> T:
        """Run ``body(pipe)`` with ``keys`` watched, retrying when another writer got there
        first; ``body`` reads in immediate mode, then calls ``pipe.multi()`` and writes.

        :class:`StorageConflictError` (nothing written) after :data:`WRITE_ATTEMPTS`
        attempts that all lost to another writer.
        """
        self._queued.flush()  # so that writes land in the order they were made
        with self._guard(), self.client.pipeline() as pipe:
            for _ in range(WRITE_ATTEMPTS):
                try:
                    if keys:
                        pipe.watch(*keys)
                    result = body(pipe)
                    pipe.execute()
                    return result
                except redis.WatchError:
                    continue
        raise StorageConflictError(
            f"gave up writing {', '.join(keys)} in {self.location} after {WRITE_ATTEMPTS} "
            "attempts: another writer changed it every time. Fix: let one process write "
            "each episode (one batch per tag), then retry."
        )

    # -- records ----------------------------------------------------------------------

    def save(self, record: R) -> R:
        """Write ``record`` (replacing any record with its pk); episodes are re-indexed."""
        self.save_all([record])
        return record

    def save_all(self, records: Iterable[StoredModel]) -> int:
        """Write many records in one transaction; returns how many."""
        batch = list(records)
        episodes = [r for r in batch if isinstance(r, EpisodeLog)]
        keys = [r.redis_key(r.pk) for r in episodes]

        def write(pipe: Any) -> int:
            old = {e.pk: _read_episode(pipe, e.pk) for e in episodes}
            _check_index(pipe, [(old[e.pk], e) for e in episodes])
            pipe.multi()
            for record in batch:
                key = record.redis_key(record.pk)
                pipe.delete(key)
                pipe.hset(key, mapping=record.to_hash())
                if isinstance(record, EpisodeLog):
                    _reindex(pipe, old[record.pk], record)
            return len(batch)

        return self._watched(keys, write)

    def get(self, model: type[R], pk: str) -> R:
        """The record ``pk``; :class:`RecordNotFoundError` if there is none,
        :class:`UnreadableRecordError` naming the key if it holds no valid record."""
        with self._guard():
            fields = _read_hash(self.client, model.redis_key(pk))
        if not fields:
            raise RecordNotFoundError(f"no {_kind(model)} {pk!r} in {self.location}")
        return _from_hash(model, pk, fields)

    def exists(self, model: type[StoredModel], pk: str) -> bool:
        """Whether the record ``pk`` exists."""
        with self._guard():
            return bool(self.client.exists(model.redis_key(pk)))

    def delete(self, model: type[StoredModel], pk: str) -> bool:
        """Delete the record ``pk`` (for episodes, with its streams and index entries)."""
        if model is EpisodeLog:
            return self.delete_episode(pk)
        with self._guard():
            return bool(self.client.delete(model.redis_key(pk)))

    def all(self, model: type[R]) -> list[R]:
        """Every record of ``model``, sorted by pk (records redis-om's ``save`` wrote too)."""
        with self._guard():
            keys = sorted(
                self.client.scan_iter(match=model.key_pattern(), count=_SCAN_BATCH, _type="HASH")
            )
            pipe = self.client.pipeline(transaction=False)
            for key in keys:
                pipe.hgetall(key)
            rows = pipe.execute()
        prefix = model.redis_key("")
        return [
            model.from_hash(key[len(prefix) :], row)
            for key, row in zip(keys, rows, strict=True)
            if row
        ]

    # -- episode lifecycle ------------------------------------------------------------

    def start_episode(self, episode: EpisodeLog) -> EpisodeLog:
        """Record that ``episode`` starts now; returns the stored record (``running``).

        An episode with the same pk that failed or is incomplete is started afresh: its old
        events are dropped and ``attempt`` counts up. Raises :class:`EpisodeExistsError`
        (naming the ways out) if that episode is complete, :class:`EpisodeStateError` if
        it is still running.
        """
        key = episode.redis_key(episode.pk)
        now = self._clock()
        self._queued.forget(episode.pk)

        def write(pipe: Any) -> EpisodeLog:
            old = _read_episode(pipe, episode.pk)
            if old is not None and old.status is EpisodeStatus.COMPLETE:
                raise EpisodeExistsError(already_played(episode.pk, self.location))
            if old is not None and old.status is EpisodeStatus.RUNNING:
                raise EpisodeStateError(
                    f"episode {episode.pk} is running; if its run died, mark_interrupted() it first"
                )
            started = episode.replace(
                status=EpisodeStatus.RUNNING,
                attempt=(old.attempt if old else 0) + 1,
                created_at=old.created_at if old else now,
                started_at=now,
                updated_at=now,
                finished_at=None,
                event_count=0,
                termination_reason="",
                error="",
                scores={},
                evaluation=None,
                evaluated_at=None,
                usage={},
                cost_usd=None,
            )
            _check_index(pipe, [(old, started)])
            pipe.multi()
            pipe.delete(
                key,
                episode_events_key(episode.pk),
                episode_calls_key(episode.pk),
            )
            pipe.hset(key, mapping=started.to_hash())
            _reindex(pipe, old, started)
            return started

        return self._watched([key], write)

    def append_event(self, episode_id: str, event: CompletedEvent | ExportedCompletedEvent) -> str:
        """Append a completed event to the running episode's stream; returns the entry id.

        Raises :class:`EpisodeStateError` (and writes nothing) if the episode is not running.
        """
        return self._append_entry(
            episode_id,
            episode_events_key(episode_id),
            EVENT_FIELD,
            encode_event(event),
            counts=True,
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
            QueuedAppend(
                episode_id, episode_events_key(episode_id), EVENT_FIELD, encode_event(event), True
            )
        )

    def flush(self) -> None:
        """Write the appends :meth:`queue_event` queued, now (every other write of the
        store does this first); a refused one is raised as ``queue_event`` says."""
        self._queued.flush()

    def append_call(self, episode_id: str, call: Mapping[str, Any]) -> str:
        """Append an accounted model call (``LLMCall.model_dump(mode="json")``) to the
        episode's calls stream; returns the entry id. :class:`EpisodeStateError` (and
        nothing written) if there is no such episode; ``TypeError``/``ValueError`` (and
        nothing written) if ``call`` is not JSON."""
        (payload,) = _encode_calls([call])
        return self._append_entry(
            episode_id, episode_calls_key(episode_id), CALL_FIELD, payload, counts=False
        )

    def _append_entry(
        self, episode_id: str, stream: str, field: str, payload: str, *, counts: bool
    ) -> str:
        self._queued.flush()
        (entry,) = self._write_appends([QueuedAppend(episode_id, stream, field, payload, counts)])
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
                    append.field,
                    append.payload,
                    now,
                    "1" if append.counts else "0",
                )
            replies: list[Any] = pipe.execute(raise_on_error=False)
        return replies

    def finish_episode(
        self,
        episode_id: str,
        *,
        status: EpisodeStatus = EpisodeStatus.COMPLETE,
        termination_reason: str = "",
        error: str = "",
        usage: Mapping[str, JsonValue] | None = None,
        cost_usd: float | None = None,
        calls: Sequence[CallData] = (),
        turns_played: int = 0,
        failed_agent: str = "",
    ) -> EpisodeLog:
        """Finalise a running episode as ``complete`` or ``failed``; returns the record.

        ``calls`` (model call records: :data:`CallData`) are appended in the
        same transaction, so the calls and the final status land together or not at all.
        Raises :class:`EpisodeStateError` if it is not running (e.g. finished twice), and
        ``TypeError``/``ValueError`` if a call is not JSON; either way nothing is written.
        Scores come later, with :meth:`save_evaluation`.
        """
        if status not in (EpisodeStatus.COMPLETE, EpisodeStatus.FAILED):
            raise ValueError(f"an episode finishes complete or failed, not {status.value}")
        self._queued.flush()
        self._queued.raise_failure(episode_id)
        return self._transition(
            episode_id,
            {
                "status": status,
                "finished_at": self._clock(),
                "termination_reason": termination_reason,
                "error": error,
                "usage": dict(usage or {}),
                "cost_usd": cost_usd,
                "turns_played": turns_played,
                "failed_agent": failed_agent,
            },
            calls=calls,
        )

    def mark_incomplete(self, episode_id: str, reason: str = "interrupted") -> EpisodeLog:
        """Mark a running episode ``incomplete`` (its events stay readable)."""
        return self._transition(episode_id, {"status": EpisodeStatus.INCOMPLETE, "error": reason})

    def mark_interrupted(
        self, *, tag: str | None = None, idle_for: float | None = None
    ) -> list[str]:
        """Mark ``incomplete`` the running episodes (of batch ``tag``) left by a dead run.

        Without ``idle_for``, every running episode counts as dead: call this when no
        other process is running that batch (as when resuming it). With ``idle_for``,
        only those with no event for that many seconds. Returns their ids.
        """
        now = self._clock()
        marked = []
        for episode in self.list_episodes(tag=tag, status=EpisodeStatus.RUNNING):
            if idle_for is not None and now - episode.updated_at < idle_for:
                continue
            try:
                self.mark_incomplete(episode.pk, "interrupted: its run stopped before it ended")
            except EpisodeStateError:
                continue  # it finished meanwhile
            marked.append(episode.pk)
        return marked

    def save_evaluation(
        self,
        episode_id: str,
        *,
        scores: Mapping[str, Mapping[str, float]],
        evaluation: Mapping[str, JsonValue],
        usage: Mapping[str, JsonValue] | None = None,
        cost_usd: float | None = None,
        calls: Sequence[CallData] = (),
    ) -> EpisodeLog:
        """Attach the evaluator's verdict to a complete episode (replacing any earlier one).

        ``usage`` and ``cost_usd``, when given, replace the episode's totals (pass the
        totals of the agents' and the judge's calls). ``calls`` (the judge's call records)
        are appended in the same transaction. :class:`EpisodeStateError` if the episode is
        not complete, ``TypeError``/``ValueError`` if a call is not JSON; either way
        nothing is written.
        """
        update: dict[str, Any] = {
            "scores": {agent: dict(dims) for agent, dims in scores.items()},
            "evaluation": dict(evaluation),
            "evaluated_at": self._clock(),
        }
        if usage is not None:
            update["usage"] = dict(usage)
        if cost_usd is not None:
            update["cost_usd"] = cost_usd
        return self._transition(episode_id, update, expected=EpisodeStatus.COMPLETE, calls=calls)

    # -- records ----------------------------------------------------------------------

    def load(self, episode_id: str) -> EpisodeRecord:
        """The stored episode as an :class:`~sotopia_are.record.EpisodeRecord` (an older
        layout is migrated on read). :class:`RecordNotFoundError` if there is none;
        :class:`UnreadableRecordError` naming the key if the record or one of its streams
        is not what the store wrote; ``ValueError`` if it was stored without a spec."""
        log = self.get_episode(episode_id)
        return record_from_stored(log, self.read_events(episode_id), self.read_calls(episode_id))

    def save_record(self, record: EpisodeRecord, *, replace: bool = False) -> EpisodeRecord:
        """Write ``record`` whole, in one transaction; :class:`EpisodeExistsError` (nothing
        written) if its id is stored, unless ``replace``. ``load`` then gives it back."""
        self.restore_episode(
            episode_log_of(record),
            list(record.events),
            record.calls,
            replace=replace,
        )
        return record

    def add_verdict(
        self,
        episode_id: str,
        verdict: Verdict,
        *,
        replace: bool = False,
        stored: EpisodeRecord | None = None,
    ) -> EpisodeRecord:
        """Attach ``verdict`` to the complete episode ``episode_id``; the record with it.

        A second judge adds its verdict; the same judge again (same
        :attr:`~sotopia_are.record.Verdict.key`) is a ``ValueError`` unless ``replace``.
        :class:`EpisodeStateError` if the episode is not complete. Nothing is written on
        an error. ``stored`` is the episode's record as the caller holds it (a run that
        just stored it): when it agrees with the stored episode, it is not read back.
        """
        key = EpisodeLog.redis_key(episode_id)

        def write(pipe: Any) -> EpisodeRecord | None:
            old = self._episode_in(pipe, episode_id, EpisodeStatus.COMPLETE)
            if old.record_version == 0:
                return None  # rewritten whole below, outside this transaction
            current = (
                stored
                if stored is not None and _agrees(old, stored)
                else record_from_stored(
                    old,
                    _read_stream(pipe, episode_events_key(episode_id), EVENT_FIELD, decode_event),
                    _read_stream(pipe, episode_calls_key(episode_id), CALL_FIELD, _decode_call),
                )
            )
            record = current.with_verdict(verdict, replace=replace)
            new = old.replace(
                record_version=record.version,
                verdicts=[v.model_dump(mode="json") for v in record.verdicts],
                evaluated_at=self._clock(),
                updated_at=self._clock(),
                **index_fields(record),
            )
            _rewrite_episode(pipe, old, new)
            return record

        written = self._watched([key], write)
        if written is not None:
            return written
        # An older layout keeps its judge's calls in the calls stream; rewrite it whole.
        record = self.load(episode_id).with_verdict(verdict, replace=replace)
        return self.save_record(record, replace=True)

    def update_complete_episode(self, episode_id: str, update: Mapping[str, Any]) -> EpisodeLog:
        """Apply ``update`` (fields of the ``EpisodeLog``) to a complete episode in one
        transaction; :class:`EpisodeStateError` (nothing written) if it is not complete."""
        return self._transition(episode_id, update, expected=EpisodeStatus.COMPLETE)

    def _transition(
        self,
        episode_id: str,
        update: Mapping[str, Any],
        *,
        expected: EpisodeStatus = EpisodeStatus.RUNNING,
        calls: Sequence[CallData] = (),
    ) -> EpisodeLog:
        """Apply ``update`` to an episode in status ``expected`` and append ``calls`` to its
        calls stream, all in one transaction."""
        key = EpisodeLog.redis_key(episode_id)
        # Encoded before the transaction: a bad call must fail before anything is queued.
        payloads = _encode_calls(calls)
        self._queued.flush()
        self._queued.forget(episode_id)  # what it failed to append no longer matters

        def write(pipe: Any) -> EpisodeLog:
            old = self._episode_in(pipe, episode_id, expected)
            new = old.replace(**update, updated_at=self._clock())
            _rewrite_episode(pipe, old, new)
            for payload in payloads:
                pipe.xadd(episode_calls_key(episode_id), {CALL_FIELD: payload})
            return new

        return self._watched([key], write)

    def _episode_in(self, pipe: Any, episode_id: str, expected: EpisodeStatus) -> EpisodeLog:
        """The stored episode, read inside a write's WATCH; :class:`RecordNotFoundError`
        if there is none, :class:`EpisodeStateError` if it is not in status ``expected``."""
        old = _read_episode(pipe, episode_id)
        if old is None:
            raise RecordNotFoundError(f"no episode {episode_id!r} in {self.location}")
        if old.status is not expected:
            raise EpisodeStateError(
                f"episode {episode_id} is {old.status.value}, not {expected.value}"
            )
        return old

    def restore_episode(
        self,
        episode: EpisodeLog,
        events: Sequence[ExportedCompletedEvent | CompletedEvent],
        calls: Sequence[CallData] = (),
        *,
        replace: bool = False,
    ) -> EpisodeLog:
        """Write a whole episode (as exported elsewhere) in one transaction; ``event_count``
        is set from ``events``.

        An episode with its pk is an :class:`EpisodeExistsError` (nothing written) unless
        ``replace``, which drops it, its events and calls first.
        """
        key = episode.redis_key(episode.pk)
        restored = episode.replace(event_count=len(events))
        payloads = [encode_event(event) for event in events]
        call_payloads = _encode_calls(calls)

        def write(pipe: Any) -> EpisodeLog:
            old = _read_episode(pipe, episode.pk)
            if old is not None and not replace:
                raise EpisodeExistsError(
                    f"episode {episode.pk} already exists in {self.location} "
                    f"({old.status.value}); nothing was written"
                )
            _check_index(pipe, [(old, restored)])
            pipe.multi()
            pipe.delete(
                key,
                episode_events_key(episode.pk),
                episode_calls_key(episode.pk),
            )
            pipe.hset(key, mapping=restored.to_hash())
            for payload in payloads:
                pipe.xadd(episode_events_key(episode.pk), {EVENT_FIELD: payload})
            for call_payload in call_payloads:
                pipe.xadd(episode_calls_key(episode.pk), {CALL_FIELD: call_payload})
            _reindex(pipe, old, restored)
            return restored

        return self._watched([key], write)

    def delete_episode(self, episode_id: str) -> bool:
        """Delete an episode, its streams and its index entries; whether it existed."""
        key = EpisodeLog.redis_key(episode_id)

        def write(pipe: Any) -> bool:
            old = _read_episode(pipe, episode_id)
            _check_index(pipe, [(old, None)])
            pipe.multi()
            pipe.delete(
                key,
                episode_events_key(episode_id),
                episode_calls_key(episode_id),
            )
            if old is not None:
                _reindex(pipe, old, None)
            return old is not None

        return self._watched([key], write)

    # -- episode reading --------------------------------------------------------------

    def get_episode(self, episode_id: str) -> EpisodeLog:
        """The episode record; :class:`RecordNotFoundError` if there is none,
        :class:`UnreadableRecordError` naming the key if it holds no valid episode."""
        return self.get(EpisodeLog, episode_id)

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
        return self._read_stream(episode_calls_key(episode_id), CALL_FIELD, _decode_call)

    def _read_stream(self, key: str, field: str, decode: Callable[[str], T]) -> list[T]:
        self._queued.flush()
        with self._guard():
            return _read_stream(self.client, key, field, decode)

    def episode_ids(
        self,
        *,
        tag: str | None = None,
        scenario: str | None = None,
        model: str | None = None,
        agent: str | None = None,
        status: EpisodeStatus | str | None = None,
        on_unreadable: OnUnreadable | None = None,
    ) -> list[str]:
        """Ids of the episodes matching every filter given, oldest first: those
        :meth:`list_episodes` lists (unreadable keys are skipped and reported the same way)."""
        return [
            episode.pk
            for episode in self.list_episodes(
                tag=tag,
                scenario=scenario,
                model=model,
                agent=agent,
                status=status,
                on_unreadable=on_unreadable,
            )
        ]

    def summaries(
        self,
        *,
        tag: str | None = None,
        scenario: str | None = None,
        model: str | None = None,
        agent: str | None = None,
        status: EpisodeStatus | str | None = None,
        limit: int | None = None,
        on_unreadable: OnUnreadable | None = None,
        judge: str | None = None,
    ) -> list[EpisodeSummary]:
        """:meth:`list_episodes`, each episode as an :class:`EpisodeSummary` whose scores
        are its latest rated verdict's — of ``judge`` (a judge model or verdict key) when
        given."""
        episodes = self.list_episodes(
            tag=tag,
            scenario=scenario,
            model=model,
            agent=agent,
            status=status,
            limit=limit,
            on_unreadable=on_unreadable,
        )
        return [summary_of(episode, judge) for episode in episodes]

    def list_episodes(
        self,
        *,
        tag: str | None = None,
        scenario: str | None = None,
        model: str | None = None,
        agent: str | None = None,
        status: EpisodeStatus | str | None = None,
        limit: int | None = None,
        on_unreadable: OnUnreadable | None = None,
    ) -> list[EpisodeLog]:
        """The episodes matching every filter given, oldest first (at most ``limit``).

        A key that is not what the store wrote (an episode key holding another type or no
        valid record, an index entry naming a missing record, an index key of another
        type) is skipped: ``on_unreadable`` gets an :class:`UnreadableRecordError` for
        each (default: a logged warning) and the rest are listed. When an index key is
        unusable, the episodes are found by scanning their records instead.
        """
        report = on_unreadable or _log_unreadable
        filters = [
            episode_index_key(name, str(value))
            for name, value in (
                ("tag", tag),
                ("scenario", scenario),
                ("model", model),
                ("agent", agent),
                ("status", EpisodeStatus(status).value if status is not None else None),
            )
            if value is not None
        ]
        with self._guard():
            try:
                ids = self._indexed_ids(filters)
            except redis.ResponseError as error:
                if "WRONGTYPE" not in str(error):
                    raise
                return self._scanned_episodes(filters, limit, report)
            return self._read_episodes(ids, filters, limit, report)

    def _indexed_ids(self, filters: list[str]) -> list[str]:
        """The ids the index keys give for ``filters``, oldest first."""
        if not filters:
            return [str(pk) for pk in self.client.zrange(EPISODES_BY_TIME, 0, -1)]
        ids = sorted(str(pk) for pk in self.client.sinter(filters))
        if not ids:
            return []
        # types-redis 4.6 (pulled in by redis-om) leaves ZMSCORE untyped.
        scores = self.client.zmscore(EPISODES_BY_TIME, ids)  # type: ignore[no-untyped-call]
        return [pk for _, pk in sorted(zip((s or 0.0 for s in scores), ids, strict=True))]

    def _read_episodes(
        self, ids: list[str], filters: list[str], limit: int | None, report: OnUnreadable
    ) -> list[EpisodeLog]:
        """The readable records of ``ids`` (the index's answer for ``filters``), in order,
        read a batch at a time until ``limit`` are found."""
        found: list[EpisodeLog] = []
        for start in range(0, len(ids), _SCAN_BATCH):
            chunk = ids[start : start + _SCAN_BATCH]
            pipe = self.client.pipeline(transaction=False)
            for pk in chunk:
                pipe.hgetall(EpisodeLog.redis_key(pk))
            rows = pipe.execute(raise_on_error=False)
            missing = [pk for pk, row in zip(chunk, rows, strict=True) if row == {}]
            dangling = self._still_indexed(missing, filters)
            for pk, row in zip(chunk, rows, strict=True):
                try:
                    found.append(self._episode_from_reply(pk, row, dangling))
                except _Absent:
                    continue
                except UnreadableRecordError as error:
                    report(error)
                    continue
                if limit is not None and len(found) >= limit:
                    return found
        return found

    def _still_indexed(self, missing: list[str], filters: list[str]) -> set[str]:
        """Which of the ``missing`` records the index still names: dangling entries. The
        others were deleted (with their index entries) after the index was read."""
        if not missing:
            return set()
        pipe = self.client.pipeline(transaction=False)
        for pk in missing:
            pipe.zscore(EPISODES_BY_TIME, pk)
            for key in filters:
                pipe.sismember(key, pk)
        replies = iter(pipe.execute(raise_on_error=False))
        dangling = set()
        for pk in missing:
            in_index = [next(replies) for _ in range(1 + len(filters))]
            if any(reply not in (None, 0, False) for reply in in_index):
                dangling.add(pk)
        return dangling

    def _episode_from_reply(self, pk: str, row: object, dangling: set[str]) -> EpisodeLog:
        """The episode from a pipelined HGETALL reply; :class:`_Absent` if the record was
        deleted meanwhile, :class:`UnreadableRecordError` if it is not a valid episode."""
        key = EpisodeLog.redis_key(pk)
        if isinstance(row, redis.ResponseError):
            raise _wrong_type(self.client, key, "hash", row)
        if not row:
            if pk in dangling:
                raise UnreadableRecordError(key, "the index lists it but no such record exists")
            raise _Absent
        return _from_hash(EpisodeLog, pk, cast(dict[str, str], row))

    def _scanned_episodes(
        self, filters: list[str], limit: int | None, report: OnUnreadable
    ) -> list[EpisodeLog]:
        """The episodes matching ``filters`` found by reading every episode record: what
        listing falls back on when an index key holds another type (each such key is
        reported)."""
        for key in [EPISODES_BY_TIME, *filters]:
            kind = _type_of(self.client, key)
            if kind not in (_index_type(key), "none"):
                report(
                    UnreadableRecordError(
                        key,
                        f"holds a {kind}, not the store's index ({_index_type(key)}); the "
                        "episodes were found by reading every episode record instead",
                    )
                )
        prefix = EpisodeLog.redis_key("")
        keys = sorted(self.client.scan_iter(match=EpisodeLog.key_pattern(), count=_SCAN_BATCH))
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(key)
        episodes = []
        for key, row in zip(keys, pipe.execute(raise_on_error=False), strict=True):
            try:
                episode = self._episode_from_reply(key[len(prefix) :], row, set())
            except _Absent:
                continue
            except UnreadableRecordError as error:
                report(error)
                continue
            if set(filters) <= _index_entries(episode):
                episodes.append(episode)
        episodes.sort(key=lambda episode: (episode.created_at, episode.pk))
        return episodes if limit is None else episodes[:limit]

    def completed_episode_ids(self, tag: str | None = None) -> set[str]:
        """Ids of the complete episodes (of batch ``tag``): what a resumed batch skips."""
        return set(self.episode_ids(tag=tag, status=EpisodeStatus.COMPLETE))


def _encode_calls(calls: Iterable[CallData]) -> list[str]:
    """Call records as calls-stream payloads; ``TypeError``/``ValueError`` if one is not
    JSON-serialisable."""
    return [
        call.model_dump_json() if isinstance(call, LLMCall) else dumps_canonical(call)
        for call in calls
    ]


class _Absent(SotopiaAreError):
    """A listed record that was deleted after the index was read: not an error."""


def _decode_call(payload: str) -> dict[str, Any]:
    call = json.loads(payload)
    if not isinstance(call, dict):
        raise ValueError(f"a call record is a JSON object, not {type(call).__name__}")
    return call


def _wrong_type(
    client: Any, key: str, expected: str, error: redis.ResponseError
) -> UnreadableRecordError | redis.ResponseError:
    """The error to raise for ``error`` from reading ``key`` (expected to be a Redis
    ``expected``): :class:`UnreadableRecordError` naming the type it holds for WRONGTYPE,
    anything else unchanged."""
    if "WRONGTYPE" not in str(error):
        return error
    return UnreadableRecordError(key, f"holds a {_type_of(client, key)}, not a {expected}")


def _type_of(client: Any, key: str) -> str:
    """The Redis type of ``key`` (``none`` if absent)."""
    return str(client.type(key))


def _read_hash(client: Any, key: str) -> dict[str, str]:
    """HGETALL ``key`` (on a client, or a pipeline in immediate mode); {} if absent,
    :class:`UnreadableRecordError` if it holds another type."""
    try:
        fields: dict[str, str] = client.hgetall(key)
    except redis.ResponseError as error:
        raise _wrong_type(client, key, "hash", error) from None
    return fields


def _from_hash(model: type[R], pk: str, fields: Mapping[str, str]) -> R:
    """``model.from_hash``, with fields that are no valid record an
    :class:`UnreadableRecordError` naming the key."""
    try:
        return model.from_hash(pk, fields)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or '(root)'}: {item['msg']}"
            for item in error.errors()[:3]
        )
        raise UnreadableRecordError(
            model.redis_key(pk), f"its fields are no valid {model.__name__} ({problems})"
        ) from None


def _not_running(episode_id: str) -> EpisodeStateError:
    return EpisodeStateError(
        f"episode {episode_id} is not running (unknown, ended or interrupted); nothing was appended"
    )


def _read_stream(client: Any, key: str, field: str, decode: Callable[[str], T]) -> list[T]:
    """The ``field`` of every entry of stream ``key``, decoded (on a client, or a pipeline
    in immediate mode); :class:`UnreadableRecordError` naming the key if it holds
    anything the store did not write."""
    try:
        entries = client.xrange(key)
    except redis.ResponseError as error:
        raise _wrong_type(client, key, "stream", error) from None
    try:
        return [decode(fields[field]) for _, fields in entries]
    except (KeyError, ValueError) as error:
        raise UnreadableRecordError(
            key, f"holds an entry that is not one the store wrote ({error!r:.200})"
        ) from None


def _agrees(log: EpisodeLog, record: EpisodeRecord) -> bool:
    """Whether ``record`` is what the store holds as ``log`` (and its streams), by what the
    log repeats of it: its events, calls (through their usage) and verdicts counted in."""
    return (
        log.record_version == record.version
        and log.status is record.status
        and log.event_count == len(record.events)
        and log.turns_played == record.turns_played
        and log.tag == record.tag
        and log.scenario_id == record.scenario_id
        and log.agents == list(record.spec.agent_names)
        and log.models == [record.models.get(name, "") for name in record.spec.agent_names]
        and log.spec == record.spec.model_dump(mode="json")
        and log.usage == usage_summary(record.usage)
        and log.verdicts == [v.model_dump(mode="json") for v in record.verdicts]
        and log.problems == list(record.problems)
    )


def _read_episode(pipe: Any, episode_id: str) -> EpisodeLog | None:
    """The stored episode (None if absent), read inside a write's WATCH;
    :class:`UnreadableRecordError` if its key holds no valid episode."""
    fields = _read_hash(pipe, EpisodeLog.redis_key(episode_id))
    return _from_hash(EpisodeLog, episode_id, fields) if fields else None


def _rewrite_episode(pipe: Any, old: EpisodeLog, new: EpisodeLog) -> None:
    """Check the index keys taking ``old`` to ``new`` writes, start the transaction and
    queue the record written whole as ``new`` with its index updates."""
    _check_index(pipe, [(old, new)])
    pipe.multi()
    key = new.redis_key(new.pk)
    pipe.delete(key)
    pipe.hset(key, mapping=new.to_hash())
    _reindex(pipe, old, new)


def _index_entries(episode: EpisodeLog) -> set[str]:
    entries = {
        episode_index_key("tag", episode.tag),
        episode_index_key("status", episode.status.value),
    }
    if episode.scenario_id:
        entries.add(episode_index_key("scenario", episode.scenario_id))
    entries.update(episode_index_key("model", m) for m in episode.models if m)
    entries.update(episode_index_key("agent", a) for a in episode.agents if a)
    return entries


def _index_type(key: str) -> str:
    """The Redis type of the store's index key ``key``."""
    return "zset" if key == EPISODES_BY_TIME else "set"


# One round trip for the types of every index key a write touches.
_TYPES_SCRIPT = """
local types = {}
for i, key in ipairs(KEYS) do types[i] = redis.call('TYPE', key)['ok'] end
return types
"""


def _check_index(pipe: Any, changes: Sequence[tuple[EpisodeLog | None, EpisodeLog | None]]) -> None:
    """:class:`UnreadableRecordError` (before anything is queued) if an index key that
    taking each ``old`` to ``new`` writes holds another type: Redis would run the rest of
    the transaction and fail only that command, leaving record and index disagreeing."""
    if not changes:
        return  # a write of profiles only: no index to touch, and nothing WATCHed
    keys = {EPISODES_BY_TIME}
    for old, new in changes:
        before = _index_entries(old) if old is not None else set()
        after = _index_entries(new) if new is not None else set()
        keys |= before ^ after
    ordered = sorted(keys)
    kinds = pipe.eval(_TYPES_SCRIPT, len(ordered), *ordered)
    for key, kind in zip(ordered, kinds, strict=True):
        if kind not in (_index_type(key), "none"):
            raise UnreadableRecordError(
                key,
                f"holds a {kind}, not the store's index ({_index_type(key)}); nothing was written",
            )


def _reindex(pipe: Any, old: EpisodeLog | None, new: EpisodeLog | None) -> None:
    """Queue the index updates that take the episode from ``old`` to ``new`` (None: absent)."""
    before = _index_entries(old) if old is not None else set()
    after = _index_entries(new) if new is not None else set()
    either = new if new is not None else old
    if either is None:
        return
    pk = either.pk
    for key in before - after:
        pipe.srem(key, pk)
    for key in after - before:
        pipe.sadd(key, pk)
    if new is None:
        pipe.zrem(EPISODES_BY_TIME, pk)
    else:
        pipe.zadd(EPISODES_BY_TIME, {new.pk: new.created_at})


def _kind(model: type[StoredModel]) -> str:
    """What a user calls a ``model`` record: "episode", "agent profile"…"""
    if model is EpisodeLog:
        return "episode"
    return re.sub(r"(?<!^)(?=[A-Z])", " ", model.__name__).lower()
