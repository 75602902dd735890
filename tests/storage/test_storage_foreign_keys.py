"""Keys under the store's names that the store did not write (another type, garbage
fields, dangling index entries): reading one record is one error naming the key; listing
reports each and goes on with the rest."""

from __future__ import annotations

import pytest

from sotopia_are.storage import EpisodeLog, EpisodeStatus, EpisodeStore, StorageError
from sotopia_are.storage.errors import UnreadableRecordError
from sotopia_are.storage.keys import (
    EPISODES_BY_TIME,
    episode_calls_key,
    episode_events_key,
    episode_index_key,
)

TAG_KEY = episode_index_key("tag", "t1")


def _episodes(store: EpisodeStore) -> None:
    """Three good episodes, ``a`` and ``b`` in batch t1 and ``c`` in t2, in that order."""
    clock = iter(range(100, 200))
    store._clock = lambda: float(next(clock))
    for pk, tag in (("a", "t1"), ("b", "t1"), ("c", "t2")):
        store.start_episode(EpisodeLog(pk=pk, tag=tag, agents=["Ann", "Bo"]))
    store.finish_episode("a")


def _collect(store: EpisodeStore, **filters: object) -> tuple[list[str], list[str]]:
    """The listed ids and the keys reported as unreadable."""
    skipped: list[UnreadableRecordError] = []
    ids = [e.pk for e in store.list_episodes(on_unreadable=skipped.append, **filters)]  # type: ignore[arg-type]
    return ids, [error.key for error in skipped]


@pytest.mark.parametrize(
    "plant",
    [
        pytest.param(lambda c, key: c.set(key, "not a hash"), id="string"),
        pytest.param(lambda c, key: c.rpush(key, "x", "y"), id="list"),
        pytest.param(lambda c, key: c.hset(key, mapping={"status": "bogus"}), id="bad-status"),
        pytest.param(lambda c, key: c.hset(key, mapping={"agents": "[not json"}), id="bad-json"),
    ],
)
def test_reading_a_foreign_episode_key_is_one_error_naming_it(store: EpisodeStore, plant) -> None:  # type: ignore[no-untyped-def]
    key = EpisodeLog.redis_key("x")
    plant(store.client, key)
    for read in (store.get_episode, store.load):
        with pytest.raises(UnreadableRecordError) as caught:
            read("x")
        assert isinstance(caught.value, StorageError) and caught.value.key == key
        assert key in str(caught.value) and "DEL" in str(caught.value)
    # A write reads the old record first: refused the same way, nothing written.
    with pytest.raises(UnreadableRecordError, match="sotopia_are:EpisodeLog:x"):
        store.start_episode(EpisodeLog(pk="x"))
    assert store.client.zscore(EPISODES_BY_TIME, "x") is None


def test_foreign_event_and_call_streams_are_named(store: EpisodeStore) -> None:
    _episodes(store)
    store.client.set(episode_events_key("a"), "junk")
    with pytest.raises(UnreadableRecordError, match=f"{episode_events_key('a')}.*holds a string"):
        store.read_events("a")
    store.client.xadd(episode_calls_key("b"), {"call": "[1, 2]"})
    with pytest.raises(UnreadableRecordError, match=episode_calls_key("b")):
        store.read_calls("b")
    store.client.xadd(episode_calls_key("c"), {"other": "{}"})
    with pytest.raises(UnreadableRecordError, match=episode_calls_key("c")):
        store.read_calls("c")


def test_listing_goes_on_past_unreadable_records_and_reports_each(store: EpisodeStore) -> None:
    _episodes(store)
    client = store.client
    # Indexed like episodes (oldest first), but not episodes the store wrote.
    client.set(EpisodeLog.redis_key("s"), "a string")
    client.hset(EpisodeLog.redis_key("g"), mapping={"status": "bogus"})
    for score, pk in enumerate(["s", "g", "gone"]):
        client.zadd(EPISODES_BY_TIME, {pk: score})
        client.sadd(TAG_KEY, pk)
    bad = [EpisodeLog.redis_key(pk) for pk in ("s", "g", "gone")]
    assert _collect(store) == (["a", "b", "c"], bad)
    assert _collect(store, tag="t1") == (["a", "b"], bad)
    assert _collect(store, tag="t1", status=EpisodeStatus.COMPLETE) == (["a"], [])
    assert _collect(store, limit=1) == (["a"], bad)
    skipped: list[UnreadableRecordError] = []
    assert store.episode_ids(tag="t1", on_unreadable=skipped.append) == ["a", "b"]
    assert [e.key for e in skipped] == bad
    assert store.completed_episode_ids("t1") == {"a"}
    assert "the index lists it but no such record exists" in skipped[2].reason


def test_listing_without_a_callback_logs_each_skipped_key(
    store: EpisodeStore, caplog: pytest.LogCaptureFixture
) -> None:
    _episodes(store)
    store.client.rpush(EpisodeLog.redis_key("l"), "x")
    store.client.zadd(EPISODES_BY_TIME, {"l": 0})
    assert store.episode_ids() == ["a", "b", "c"]
    assert "skipped sotopia_are:EpisodeLog:l: holds a list, not a hash" in caplog.text


@pytest.mark.parametrize("index", [EPISODES_BY_TIME, TAG_KEY])
def test_a_foreign_index_key_is_reported_and_listing_reads_the_records(
    store: EpisodeStore, index: str
) -> None:
    _episodes(store)
    store.client.set(EpisodeLog.redis_key("s"), "a string")
    store.client.delete(index)
    store.client.set(index, "not an index")
    # Only the scan that replaces the time index comes across the unindexed key ``s``.
    assert _collect(store) == (
        ["a", "b", "c"],
        [EPISODES_BY_TIME, EpisodeLog.redis_key("s")] if index == EPISODES_BY_TIME else [],
    )
    listed, skipped = _collect(store, tag="t1")
    assert listed == ["a", "b"] and skipped[0] == index
    assert _collect(store, tag="t1", limit=1)[0] == ["a"]
    assert store.completed_episode_ids("t1") == {"a"}
    if index == TAG_KEY:
        assert store.mark_interrupted(tag="t1") == ["b"]
        return
    # A write that would update the foreign index refuses before queuing anything.
    with pytest.raises(UnreadableRecordError, match=f"{index}.*nothing was written"):
        store.mark_interrupted(tag="t1")
    assert store.get_episode("b").status is EpisodeStatus.RUNNING
    assert store.client.sismember(episode_index_key("status", "running"), "b")
