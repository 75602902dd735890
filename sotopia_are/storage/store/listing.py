"""`EpisodeListing`: which episodes match a filter, from the store's own index keys.

One filter value, :class:`EpisodeFilter`, says which episodes a listing selects; the
listing methods take its fields as keyword arguments (``tag=``, ``status=``…). The
index sets (see :mod:`~sotopia_are.storage.keys`) answer without RediSearch; a key that
is not what the store wrote is skipped and reported, never a failed listing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypedDict, Unpack, cast

import redis

from sotopia_are import SotopiaAreError
from sotopia_are.record import EpisodeSummary
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage.episode_layout import LISTED_FIELDS, summary_from_listing, summary_of
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.errors import UnreadableRecordError
from sotopia_are.storage.keys import EPISODES_BY_TIME, SUMMARY_FIELD, episode_index_key
from sotopia_are.storage.store.client import StoreClient
from sotopia_are.storage.store.entries import SCAN_BATCH, from_hash, type_of, wrong_type
from sotopia_are.storage.store.index import index_entries, index_type, listing_text
from sotopia_are.storage.store.round_trip import round_trip

__all__ = ["EpisodeFilter", "EpisodeListing", "OnUnreadable", "index_keys"]

_log = logging.getLogger(__name__)

OnUnreadable = Callable[[UnreadableRecordError], None]
"""What listing calls with each key it skips because it is not what the store wrote."""


class EpisodeFilter(TypedDict, total=False):
    """Which episodes a listing selects: those matching every field given (a missing or
    None field selects any). ``model`` and ``agent`` match any of the episode's."""

    tag: str | None
    scenario: str | None
    model: str | None
    agent: str | None
    status: EpisodeStatus | str | None


_FILTER_FIELDS = tuple(EpisodeFilter.__annotations__)


def index_keys(where: EpisodeFilter) -> list[str]:
    """The index set of each field ``where`` gives, in field order; ``TypeError`` for a
    key that is no field, ``ValueError`` for a ``status`` that is none."""
    unknown = sorted(set(where) - set(_FILTER_FIELDS))
    if unknown:
        raise TypeError(
            f"unexpected keyword argument(s) {', '.join(map(repr, unknown))}; an episode "
            f"filter has {', '.join(_FILTER_FIELDS)}"
        )
    status = where.get("status")
    given: Mapping[str, object] = {
        **where,
        "status": None if status is None else EpisodeStatus(status).value,
    }
    return [
        episode_index_key(name, str(given[name]))
        for name in _FILTER_FIELDS
        if given.get(name) is not None
    ]


def _log_unreadable(error: UnreadableRecordError) -> None:
    """The default report of a skipped key: listing should not be silent about it."""
    _log.warning("skipped %s: %s", error.key, error.reason)


class EpisodeListing(StoreClient):
    """Listing episodes: their logs, ids or summaries, oldest first."""

    def list_episodes(
        self,
        *,
        limit: int | None = None,
        on_unreadable: OnUnreadable | None = None,
        **where: Unpack[EpisodeFilter],
    ) -> list[EpisodeLog]:
        """The episodes matching every filter given (``where``: the fields of
        :class:`EpisodeFilter`), oldest first (at most ``limit``).

        A key that is not what the store wrote (an episode key holding another type or no
        valid record, an index entry naming a missing record, an index key of another
        type) is skipped: ``on_unreadable`` gets an :class:`UnreadableRecordError` for
        each (default: a logged warning) and the rest are listed. When an index key is
        unusable, the episodes are found by scanning their records instead.
        """
        report = on_unreadable or _log_unreadable
        filters = index_keys(where)
        with self._guard():
            try:
                ids = self._indexed_ids(filters)
            except redis.ResponseError as error:
                if "WRONGTYPE" not in str(error):
                    raise
                return self._scanned_episodes(filters, limit, report)
            return self._read_episodes(ids, filters, limit, report)

    def episode_ids(
        self, *, on_unreadable: OnUnreadable | None = None, **where: Unpack[EpisodeFilter]
    ) -> list[str]:
        """Ids of the episodes matching every filter given, oldest first: those
        :meth:`list_episodes` lists (unreadable keys are skipped and reported the same way),
        read from their listed summaries, not their whole records."""
        return [s.episode_id for s in self.iter_summaries(on_unreadable=on_unreadable, **where)]

    def summaries(
        self,
        *,
        limit: int | None = None,
        on_unreadable: OnUnreadable | None = None,
        judge: str | None = None,
        **where: Unpack[EpisodeFilter],
    ) -> list[EpisodeSummary]:
        """:meth:`list_episodes`, each episode as an :class:`EpisodeSummary` whose scores
        are its latest rated verdict's — of ``judge`` (a judge model or verdict key) when
        given: :meth:`iter_summaries` as a list."""
        return list(
            self.iter_summaries(limit=limit, on_unreadable=on_unreadable, judge=judge, **where)
        )

    def iter_summaries(
        self,
        *,
        limit: int | None = None,
        on_unreadable: OnUnreadable | None = None,
        judge: str | None = None,
        **where: Unpack[EpisodeFilter],
    ) -> Iterator[EpisodeSummary]:
        """The summaries :meth:`summaries` lists, read a batch at a time as they are
        consumed: what is held at once is the matching ids and one batch, whatever the
        number of episodes.

        Each comes from the few hundred bytes the store keeps beside the record (see
        :data:`~sotopia_are.storage.keys.SUMMARY_FIELD`); an episode written before those
        existed is read whole, and its summary added then (unless the episode changed
        meanwhile, or the server refuses writes), so the next listing is quick.
        """
        report = on_unreadable or _log_unreadable
        filters = index_keys(where)
        with self._guard():
            try:
                ids = self._indexed_ids(filters)
            except redis.ResponseError as error:
                if "WRONGTYPE" not in str(error):
                    raise
                ids = None
        if ids is None:
            with self._guard():
                episodes = self._scanned_episodes(filters, limit, report)
            yield from (summary_of(episode, judge) for episode in episodes)
            return
        listed = 0
        for start in range(0, len(ids), SCAN_BATCH):
            with self._guard():
                batch = self._summary_batch(ids[start : start + SCAN_BATCH], filters, report, judge)
            for summary in batch:
                yield summary
                listed += 1
                if limit is not None and listed >= limit:
                    return

    def _summary_batch(
        self, chunk: list[str], filters: list[str], report: OnUnreadable, judge: str | None
    ) -> list[EpisodeSummary]:
        """The summaries of the readable episodes of ``chunk``, in order: from their
        listed summaries in one round trip, the others from their whole records."""
        asked = (SUMMARY_FIELD, *LISTED_FIELDS)
        replies = round_trip(
            self.client, [("HMGET", EpisodeLog.redis_key(pk), *asked) for pk in chunk]
        )
        found: dict[str, EpisodeSummary] = {}
        unlisted = []
        for pk, reply in zip(chunk, replies, strict=True):
            if isinstance(reply, redis.ResponseError):
                _report_or_raise(self.client, EpisodeLog.redis_key(pk), reply, report)
                continue
            text, *values = reply
            if text is None:
                unlisted.append(pk)  # none yet: read it whole
                continue
            fields = {name: v for name, v in zip(LISTED_FIELDS, values, strict=True) if v}
            try:
                listing = json.loads(text)
                episode = from_hash(EpisodeLog, pk, fields)
                found[pk] = summary_from_listing(episode, listing, judge)
            except UnreadableRecordError as error:
                report(error)
            except ValueError:
                unlisted.append(pk)  # not one the store wrote: read it whole
        for episode in self._listed_whole(unlisted, filters, report):
            found[episode.pk] = summary_of(episode, judge)
        return [found[pk] for pk in chunk if pk in found]

    def _listed_whole(
        self, chunk: Sequence[str], filters: list[str], report: OnUnreadable
    ) -> list[EpisodeLog]:
        """The readable records of ``chunk`` (episodes without a listed summary), read
        whole; each gets its listed summary in one transaction guarded by WATCH, so none is
        written for a record that changed after it was read (that one is listed as read)."""
        if not chunk:
            return []
        keys = [EpisodeLog.redis_key(pk) for pk in chunk]
        with self.client.pipeline() as guarded:
            guarded.watch(*keys)
            episodes = self._read_episodes(list(chunk), filters, None, report)
            guarded.multi()
            for episode in episodes:
                text = listing_text(episode)
                if text is not None:
                    guarded.hset(episode.redis_key(episode.pk), SUMMARY_FIELD, text)
            try:
                guarded.execute()
            except redis.WatchError:
                pass  # written meanwhile: its writer added its summary, or the next listing will
            except redis.ResponseError as error:
                if self._refusal(error) is None:
                    raise
                # A server refusing writes (read-only replica, full) still lists.
        return episodes

    def completed_episode_ids(self, tag: str | None = None) -> set[str]:
        """Ids of the complete episodes (of batch ``tag``): what a resumed batch skips."""
        return set(self.episode_ids(tag=tag, status=EpisodeStatus.COMPLETE))

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
        for start in range(0, len(ids), SCAN_BATCH):
            chunk = ids[start : start + SCAN_BATCH]
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
            raise wrong_type(self.client, key, "hash", row)
        if not row:
            if pk in dangling:
                raise UnreadableRecordError(key, "the index lists it but no such record exists")
            raise _Absent
        return from_hash(EpisodeLog, pk, cast(dict[str, str], row))

    def _scanned_episodes(
        self, filters: list[str], limit: int | None, report: OnUnreadable
    ) -> list[EpisodeLog]:
        """The episodes matching ``filters`` found by reading every episode record: what
        listing falls back on when an index key holds another type (each such key is
        reported)."""
        for key in [EPISODES_BY_TIME, *filters]:
            kind = type_of(self.client, key)
            if kind not in (index_type(key), "none"):
                report(
                    UnreadableRecordError(
                        key,
                        f"holds a {kind}, not the store's index ({index_type(key)}); the "
                        "episodes were found by reading every episode record instead",
                    )
                )
        prefix = EpisodeLog.redis_key("")
        keys = sorted(self.client.scan_iter(match=EpisodeLog.key_pattern(), count=SCAN_BATCH))
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
            if set(filters) <= index_entries(episode):
                episodes.append(episode)
        episodes.sort(key=lambda episode: (episode.created_at, episode.pk))
        return episodes if limit is None else episodes[:limit]


def _report_or_raise(
    client: object, key: str, error: redis.ResponseError, report: OnUnreadable
) -> None:
    """Report a key holding another type (WRONGTYPE) as unreadable; raise anything else."""
    problem = wrong_type(client, key, "hash", error)
    if not isinstance(problem, UnreadableRecordError):
        raise problem
    report(problem)


class _Absent(SotopiaAreError):
    """A listed record that was deleted after the index was read: not an error."""
