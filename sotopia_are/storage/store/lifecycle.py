"""`EpisodeLifecycle`: an episode's life in the store, from start to verdicts.

:meth:`~EpisodeLifecycle.start_episode` (status ``running``), its events appended as
they happen (:mod:`.appends`), then :meth:`~EpisodeLifecycle.finish_episode` (``complete``
or ``failed``, with usage and the run's model calls, in one transaction), and later
:meth:`~EpisodeLifecycle.add_verdict` for each judge. A run that dies in between leaves a
readable ``running`` episode with the events it had;
:meth:`~EpisodeLifecycle.mark_interrupted` turns such leftovers into ``incomplete`` ones.
Each step checks the status it starts from, inside the transaction that writes it.

A step of an episode this store wrote last (a batch's: a new episode's start, its end,
its first verdict) is one round trip, a Lua script checked against what the store wrote
(:mod:`.written`); any other goes the general way (WATCH, read, validate, rewrite the
record whole). Both leave the same in Redis and raise the same errors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue, ValidationError

from sotopia_are.record import EpisodeRecord, Verdict
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage.episode_layout import index_fields, record_from_stored, usage_summary
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.errors import (
    EpisodeExistsError,
    EpisodeStateError,
    RecordNotFoundError,
    already_played,
)
from sotopia_are.storage.events import EVENT_FIELD, decode_event
from sotopia_are.storage.keys import episode_calls_key, episode_events_key
from sotopia_are.storage.queued import QueuedAppend
from sotopia_are.storage.store.entries import (
    CALL_FIELD,
    CallData,
    call_entries,
    decode_call,
    read_episode,
    read_stream,
)
from sotopia_are.storage.store.index import check_index, reindex, rewrite_episode, write_hash
from sotopia_are.storage.store.listing import EpisodeListing
from sotopia_are.storage.store.reading import EpisodeReading
from sotopia_are.storage.store.restoring import EpisodeRestoring
from sotopia_are.storage.store.verdict_json import verdict_json, verdicts_text
from sotopia_are.storage.store.written import STEP_SCRIPT, STEP_SHA, Step, Written, changed_log

__all__ = ["EpisodeLifecycle"]


class EpisodeLifecycle(EpisodeReading, EpisodeListing, EpisodeRestoring):
    """Starting, finishing, interrupting and rating episodes."""

    def start_episode(self, episode: EpisodeLog) -> EpisodeLog:
        """Record that ``episode`` starts now; returns the stored record (``running``).

        An episode with the same pk that failed or is incomplete is started afresh: its old
        events are dropped and ``attempt`` counts up. Raises :class:`EpisodeExistsError`
        (naming the ways out) if that episode is complete, :class:`EpisodeStateError` if
        it is still running.

        ``episode`` is validated again, whole, as the started record is made (a record
        may have been changed since it was built: pydantic does not validate assignments).
        """
        return self._start(episode, validated=False)

    def _start_built(self, episode: EpisodeLog) -> EpisodeLog:
        """:meth:`start_episode` of a record its caller built by validation just now and
        that nobody else holds (``EpisodeRecorder.start``'s): taken as it is, only the
        times the start sets (the clock's reading) validated. The store's own recorder
        alone calls it: a user's record is always validated again."""
        return self._start(episode, validated=True)

    def _start(self, episode: EpisodeLog, *, validated: bool) -> EpisodeLog:
        now = self._clock()
        self._queued.forget(episode.pk)

        def started_after(old: EpisodeLog | None) -> EpisodeLog:
            times = {
                "created_at": old.created_at if old else now,
                "started_at": now,
                "updated_at": now,
            }
            # Valid as they are: constants (fresh containers each time), or old's count.
            started = {
                "status": EpisodeStatus.RUNNING,
                "attempt": (old.attempt if old else 0) + 1,
                "finished_at": None,
                "event_count": 0,
                "termination_reason": "",
                "error": "",
                "scores": {},
                "evaluation": None,
                "evaluated_at": None,
                "usage": {},
                "cost_usd": None,
            }
            if validated:
                return changed_log(episode, times, started)
            return episode.replace(**times, **started)

        if self._written.capacity:  # a new episode (the usual case) in one round trip
            with contextlib.suppress(ValidationError):  # raised the general way below
                fresh = self._step(None, started_after(None))
                if fresh is not None:
                    return fresh

        key = episode.redis_key(episode.pk)

        def write(pipe: Any) -> EpisodeLog:
            old = read_episode(pipe, episode.pk)
            if old is not None and old.status is EpisodeStatus.COMPLETE:
                raise EpisodeExistsError(already_played(episode.pk, self.location))
            if old is not None and old.status is EpisodeStatus.RUNNING:
                raise EpisodeStateError(
                    f"episode {episode.pk} is running; if its run died, mark_interrupted() it first"
                )
            started = started_after(old)
            check_index(pipe, [(old, started)])
            pipe.multi()
            pipe.delete(
                key,
                episode_events_key(episode.pk),
                episode_calls_key(episode.pk),
            )
            write_hash(pipe, started)
            reindex(pipe, old, started)
            return started

        return self._watched([key], write)

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
        update = {
            "status": status,
            "finished_at": self._clock(),
            "termination_reason": termination_reason,
            "error": error,
            "usage": dict(usage or {}),
            "cost_usd": cost_usd,
            "turns_played": turns_played,
            "failed_agent": failed_agent,
        }
        # The episode's events still queued (a batch finds its last ones there) go in the
        # finish's own round trip, not in one of their own before it; other episodes'
        # stay queued for the window's end.
        events = self._queued.take(episode_id)
        if events:
            try:
                finished = self._finish_with(episode_id, update, calls, events)
            except BaseException:
                # Not written, or written and the episode finished (the reply lost): the
                # window's end writes them as the flush before the finish did, or the
                # appends script refuses them for the finished episode.
                self._queued.put_back(events)
                raise
            if finished is not None:
                return finished
            self._queued.put_back(events)  # written the usual way, refused as it says
        self._queued.flush()
        self._queued.raise_failure(episode_id)
        return self._transition(episode_id, update, calls=calls)

    def _finish_with(
        self,
        episode_id: str,
        update: Mapping[str, Any],
        calls: Sequence[CallData],
        events: Sequence[QueuedAppend],
    ) -> EpisodeLog | None:
        """The running episode's finish (``update``, ``calls``) with its queued ``events``
        appended first, in one round trip; None when it was not written (nothing was):
        not the episode this store wrote last, a call that is no JSON, or Redis holding
        anything else than what the appends script would append to (every other refusal
        of an append, or of the finish, is the one the usual way makes)."""
        key = EpisodeLog.redis_key(episode_id)
        remembered = self._written.get(key)
        stream = episode_events_key(episode_id)
        if (
            remembered is None
            or remembered.log.status is not EpisodeStatus.RUNNING
            or any(not event.counts or event.stream != stream for event in events)
        ):
            return None
        try:
            entries = call_entries(calls)
            new = changed_log(remembered.log, {**update, "updated_at": self._clock()})
        except (TypeError, ValueError):  # a call, or ValidationError: raised the usual way
            return None
        with contextlib.suppress(ValidationError):  # as _transition: the usual way
            stepped = self._step(remembered, new, [*update, "updated_at"], entries, events=events)
            if stepped is not None:
                return stepped
        # Redis does not hold what was remembered: the usual way reads it, not a second
        # step certain to be refused too.
        self._written.forget([key])
        return None

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
        Nor, then, are the verdicts' JSON for the episode's export parts: the record's
        verdicts (as ``stored`` holds them, and ``verdict``) are taken as reading back
        their JSON gives them, so each must hold values of its fields' types, as
        validation, or building it with ``of_valid_fields`` from valid parts, makes it.
        """
        key = EpisodeLog.redis_key(episode_id)
        evaluated_at, updated_at = self._clock(), self._clock()
        remembered = self._written.get(key)
        if (
            remembered is not None
            and remembered.log.status is EpisodeStatus.COMPLETE
            and remembered.log.record_version != 0
            and stored is not None
            and _agrees(remembered.log, stored)
        ):
            # Any error is raised the general way below, from what Redis holds.
            with contextlib.suppress(ValueError):  # ValidationError and VerdictExistsError
                record = stored.with_verdict(verdict, replace=replace)
                index = index_fields(record)
                changed = ["record_version", "evaluated_at", "updated_at", *index, "verdicts"]
                checked = {
                    "record_version": record.version,
                    "evaluated_at": evaluated_at,
                    "updated_at": updated_at,
                    "cost_usd": index.pop("cost_usd"),  # the calls' costs summed
                }
                # Made just now of validated models (the usage's JSON dump; the verdict's
                # means and judge, of their fields' types as above) and the verdicts' JSON
                # dumped from them: taken (and written) as they are, as validating them
                # would give them back unchanged.
                verdicts = [verdict_json(v) for v in record.verdicts]
                new = changed_log(remembered.log, checked, {**index, "verdicts": verdicts})
                # As UTF-8 once: digested, sent and joined into the export line as such.
                texts: dict[str, str | bytes] = {
                    "verdicts": verdicts_text(record.verdicts, verdicts)
                }
                # (A subclass would be dumped with its own fields and read back without.)
                exact = all(type(v) is Verdict for v in record.verdicts)
                stepped = self._step(
                    remembered,
                    new,
                    changed,
                    texts=texts,
                    verdicts=record.verdicts if exact else None,
                )
                if stepped is not None:
                    return record

        def write(pipe: Any) -> EpisodeRecord | None:
            old = self._episode_in(pipe, episode_id, EpisodeStatus.COMPLETE)
            if old.record_version == 0:
                return None  # rewritten whole below, outside this transaction
            current = (
                stored
                if stored is not None and _agrees(old, stored)
                else record_from_stored(
                    old,
                    read_stream(pipe, episode_events_key(episode_id), EVENT_FIELD, decode_event),
                    read_stream(pipe, episode_calls_key(episode_id), CALL_FIELD, decode_call),
                )
            )
            record = current.with_verdict(verdict, replace=replace)
            new = old.replace(
                record_version=record.version,
                verdicts=[verdict_json(v) for v in record.verdicts],
                evaluated_at=evaluated_at,
                updated_at=updated_at,
                **index_fields(record),
            )
            rewrite_episode(pipe, old, new)
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
        entries = call_entries(calls)
        self._queued.flush()
        self._queued.forget(episode_id)  # what it failed to append no longer matters
        now = self._clock()
        remembered = self._written.get(key)
        # An update naming updated_at is refused the general way below (TypeError).
        if (
            remembered is not None
            and remembered.log.status is expected
            and "updated_at" not in update
        ):
            with contextlib.suppress(ValidationError):  # raised the general way below
                new = changed_log(remembered.log, {**update, "updated_at": now})
                stepped = self._step(remembered, new, [*update, "updated_at"], entries)
                if stepped is not None:
                    return stepped

        def write(pipe: Any) -> EpisodeLog:
            old = self._episode_in(pipe, episode_id, expected)
            new = old.replace(**update, updated_at=now)
            rewrite_episode(pipe, old, new)
            for entry in entries:
                pipe.xadd(episode_calls_key(episode_id), entry)
            return new

        return self._watched([key], write)

    def _step(
        self,
        old: Written | None,
        new: EpisodeLog,
        changed: Sequence[str] = (),
        calls: Sequence[Mapping[str, str | bytes]] = (),
        *,
        texts: Mapping[str, str | bytes] | None = None,
        verdicts: Sequence[Verdict] | None = None,
        events: Sequence[QueuedAppend] = (),
    ) -> EpisodeLog | None:
        """Write the step from ``old`` (what this store last wrote; None: a start, there
        must be no hash) to ``new`` in one round trip (see :mod:`.written`); ``new`` as
        stored, or None when Redis holds something else (nothing was written: take the
        step the general way). ``texts`` and ``verdicts`` are :meth:`Step.of`'s;
        ``events`` the episode's queued appends that ``QueuedAppends.take`` took, written
        by the step (the others queued stay for the window's end: they touch none of its
        keys)."""
        entries = [event.fields for event in events]
        step = Step.of(old, new, changed, calls, texts, verdicts, entries)
        if not events:
            self._queued.flush()  # so that writes land in the order they were made
        with self._guard():
            reply = self._evalsha(STEP_SHA, STEP_SCRIPT, step.keys, step.args)
        if not reply[0]:
            return None
        stored, written = step.written(new, reply[1])
        # Remembered for the steps a batch takes next: a running episode's end, a complete
        # one's first verdict (a later one reads what is stored, as does a restart).
        if stored.status is EpisodeStatus.RUNNING or (
            stored.status is EpisodeStatus.COMPLETE and not stored.verdicts
        ):
            self._written.remember(step.keys[0], written)
        else:
            self._written.forget([step.keys[0]])
        return stored

    def _episode_in(self, pipe: Any, episode_id: str, expected: EpisodeStatus) -> EpisodeLog:
        """The stored episode, read inside a write's WATCH; :class:`RecordNotFoundError`
        if there is none, :class:`EpisodeStateError` if it is not in status ``expected``."""
        old = read_episode(pipe, episode_id)
        if old is None:
            raise RecordNotFoundError(f"no episode {episode_id!r} in {self.location}")
        if old.status is not expected:
            raise EpisodeStateError(
                f"episode {episode_id} is {old.status.value}, not {expected.value}"
            )
        return old


def _agrees(log: EpisodeLog, record: EpisodeRecord) -> bool:
    """Whether ``record`` is what the store holds as ``log`` (and its streams), by what the
    log repeats of it: its events, calls (through their usage) and verdicts counted in."""
    return (
        log.record_version == record.version
        and log.status is record.status
        and log.event_count == record.event_count
        and log.turns_played == record.turns_played
        and log.tag == record.tag
        and log.scenario_id == record.scenario_id
        and log.agents == list(record.spec.agent_names)
        and log.models == [record.models.get(name, "") for name in record.spec.agent_names]
        and log.spec == record.spec.model_dump(mode="json")
        and log.usage == usage_summary(record.usage)
        and log.verdicts == [verdict_json(v) for v in record.verdicts]
        and log.problems == list(record.problems)
    )
