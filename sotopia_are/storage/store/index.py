"""The store's own index keys: what each episode is listed under, kept in step with it.

Every write of an episode queues, in its transaction, the index updates taking the old
record to the new one (:func:`reindex`; its listed summary too, in its own hash), after
checking that no index key it touches holds another Redis type (:func:`check_index`), so
that record and index never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sotopia_are.storage.episode_layout import listing_of
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.errors import UnreadableRecordError
from sotopia_are.storage.exported import exported_text
from sotopia_are.storage.fields import dumps_ordered
from sotopia_are.storage.keys import (
    EPISODES_BY_TIME,
    EXPORTED_FIELD,
    SUMMARY_FIELD,
    episode_index_key,
)

__all__ = [
    "check_index",
    "index_entries",
    "index_type",
    "listing_text",
    "reindex",
    "rewrite_episode",
    "write_hash",
]


def rewrite_episode(pipe: Any, old: EpisodeLog, new: EpisodeLog) -> None:
    """Check the index keys taking ``old`` to ``new`` writes, start the transaction and
    queue the record written whole as ``new`` with its index updates."""
    check_index(pipe, [(old, new)])
    pipe.multi()
    pipe.delete(new.redis_key(new.pk))
    write_hash(pipe, new)
    reindex(pipe, old, new)


def write_hash(pipe: Any, episode: EpisodeLog) -> None:
    """Queue the hash of ``episode`` written as its fields and, for a finished one, its
    export parts (:data:`~sotopia_are.storage.keys.EXPORTED_FIELD`). Over a deleted key:
    a field left from before would not be the record's."""
    written = episode.to_hash()
    exported = exported_text(episode, written)
    mapping = written if exported is None else {**written, EXPORTED_FIELD: exported}
    pipe.hset(episode.redis_key(episode.pk), mapping=mapping)


def index_entries(episode: EpisodeLog) -> set[str]:
    entries = {
        episode_index_key("tag", episode.tag),
        episode_index_key("status", episode.status.value),
    }
    if episode.scenario_id:
        entries.add(episode_index_key("scenario", episode.scenario_id))
    entries.update(episode_index_key("model", m) for m in episode.models if m)
    entries.update(episode_index_key("agent", a) for a in episode.agents if a)
    return entries


def index_type(key: str) -> str:
    """The Redis type of the store's index key ``key``."""
    return "zset" if key == EPISODES_BY_TIME else "set"


# One round trip for the types of every index key a write touches.
TYPES_SCRIPT = """
local types = {}
for i, key in ipairs(KEYS) do types[i] = redis.call('TYPE', key)['ok'] end
return types
"""


def check_index(pipe: Any, changes: Sequence[tuple[EpisodeLog | None, EpisodeLog | None]]) -> None:
    """:class:`UnreadableRecordError` (before anything is queued) if an index key that
    taking each ``old`` to ``new`` writes holds another type: Redis would run the rest of
    the transaction and fail only that command, leaving record and index disagreeing."""
    if not changes:
        return  # a write of profiles only: no index to touch, and nothing WATCHed
    keys = {EPISODES_BY_TIME}
    for old, new in changes:
        before = index_entries(old) if old is not None else set()
        after = index_entries(new) if new is not None else set()
        keys |= before ^ after
    ordered = sorted(keys)
    kinds = pipe.eval(TYPES_SCRIPT, len(ordered), *ordered)
    for key, kind in zip(ordered, kinds, strict=True):
        if kind not in (index_type(key), "none"):
            raise UnreadableRecordError(
                key,
                f"holds a {kind}, not the store's index ({index_type(key)}); nothing was written",
            )


def reindex(pipe: Any, old: EpisodeLog | None, new: EpisodeLog | None) -> None:
    """Queue the index updates that take the episode from ``old`` to ``new`` (None: absent)."""
    before = index_entries(old) if old is not None else set()
    after = index_entries(new) if new is not None else set()
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
        return
    pipe.zadd(EPISODES_BY_TIME, {new.pk: new.created_at})
    listing = listing_text(new)
    if listing is not None:
        pipe.hset(new.redis_key(pk), SUMMARY_FIELD, listing)


def listing_text(episode: EpisodeLog) -> str | None:
    """What a listing shows of ``episode`` as the text of its hash's
    :data:`~sotopia_are.storage.keys.SUMMARY_FIELD`; None for verdicts no store wrote
    (their listing is then read from the whole record, as before the field existed)."""
    try:
        return dumps_ordered(listing_of(episode))
    except (KeyError, TypeError, ValueError):
        return None
