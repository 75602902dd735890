"""Appends queued in a running event loop (what the recorder does for a batch's episodes)
reach Redis together when the window ends (or the queue is full), in order, before any
other write; one the store refuses is raised in its own episode, never lost and never
raised into the loop."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis_servers import RedisServerProcess
from storage_episodes_support import flat_agents, flat_spec

from sotopia_are.simulation.data_handler.exporter import convert_completed_event
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import run_episode
from sotopia_are.storage import (
    EpisodeLog,
    EpisodeStateError,
    EpisodeStatus,
    EpisodeStore,
    StorageUnavailableError,
    connect,
    queued,
)
from sotopia_are.storage.keys import episode_events_key


async def played_events() -> list[CompletedEvent]:
    spec = flat_spec("source")
    return list((await run_episode(spec, flat_agents(spec))).events)


async def window_ends() -> None:
    """Let the loop run past the window the appends queued so far wait in."""
    await asyncio.sleep(2 * queued.FLUSH_WINDOW_S)


async def test_queued_events_land_together_when_the_window_ends_in_order(
    store: EpisodeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queued, "FLUSH_WINDOW_S", 0.5)  # longer than these turns take
    events = await played_events()
    ids = [f"q-{n}" for n in range(3)]
    for episode_id in [*ids, "warm"]:
        store.start_episode(EpisodeLog(pk=episode_id))
    store.append_event("warm", events[0])  # the script is loaded: one EVALSHA a write
    with connect(store.url) as other:
        for event in events[:4]:
            for episode_id in ids:
                store.queue_event(episode_id, event)
            # Another connection (a follower, another process) sees nothing yet, turns
            # of the loop later ...
            await asyncio.sleep(0)
            assert other.read_events("q-0") == []
        before = store.client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
        await window_ends()  # ... and all of it, in one round trip, once the window is over.
        after = store.client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
        assert after - before == 1
        for episode_id in ids:
            assert other.read_events(episode_id) == [convert_completed_event(e) for e in events[:4]]
            assert other.get_episode(episode_id).event_count == 4


async def test_a_full_queue_is_written_at_once(
    store: EpisodeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = await played_events()
    monkeypatch.setattr(queued, "FLUSH_MAX_QUEUED", 3)
    monkeypatch.setattr(queued, "FLUSH_WINDOW_S", 0.5)
    store.start_episode(EpisodeLog(pk="full"))
    with connect(store.url) as other:
        for event in events[:2]:
            store.queue_event("full", event)
        assert other.get_episode("full").event_count == 0
        store.queue_event("full", events[2])  # the third: the queue goes out now
        assert other.get_episode("full").event_count == 3
        store.queue_event("full", events[3])  # waits for the window, as before
        assert other.get_episode("full").event_count == 3
        await window_ends()
        assert other.get_episode("full").event_count == 4


async def test_a_write_after_queued_events_lands_after_them(store: EpisodeStore) -> None:
    events = await played_events()
    store.start_episode(EpisodeLog(pk="ordered"))
    for event in events:
        store.queue_event("ordered", event)
    finished = store.finish_episode("ordered", turns_played=5)
    assert finished.event_count == len(events)
    assert store.read_events("ordered") == [convert_completed_event(e) for e in events]


async def test_a_refused_append_is_raised_in_its_episode_only(store: EpisodeStore) -> None:
    events = await played_events()
    for episode_id in ("ended-elsewhere", "fine"):
        store.start_episode(EpisodeLog(pk=episode_id))
    # Another process ends one episode while this one still plays it.
    with connect(store.url) as other:
        other.mark_incomplete("ended-elsewhere")
    store.queue_event("ended-elsewhere", events[0])
    store.queue_event("fine", events[0])
    await window_ends()  # the window's write goes out without an error in the loop
    with pytest.raises(EpisodeStateError, match="ended-elsewhere is not running"):
        store.queue_event("ended-elsewhere", events[1])
    store.queue_event("fine", events[1])
    assert store.finish_episode("fine").event_count == 2
    assert store.read_events("ended-elsewhere") == []
    assert store.get_episode("ended-elsewhere").status is EpisodeStatus.INCOMPLETE


async def test_a_refused_append_fails_its_episode_end(store: EpisodeStore) -> None:
    events = await played_events()
    store.start_episode(EpisodeLog(pk="gone"))
    store.queue_event("gone", events[0])
    with connect(store.url) as other:
        other.delete_episode("gone")  # before the window ends: the append finds no episode
        await window_ends()
    with pytest.raises(EpisodeStateError, match="gone is not running"):
        store.finish_episode("gone")


async def test_closing_the_store_writes_what_waits_for_the_window(store: EpisodeStore) -> None:
    events = await played_events()
    store.start_episode(EpisodeLog(pk="closed"))
    with connect(store.url) as writer:
        writer.queue_event("closed", events[0])
    assert store.get_episode("closed").event_count == 1  # before the window's end


def test_outside_an_event_loop_a_queued_event_is_written_at_once(store: EpisodeStore) -> None:
    events = asyncio.run(played_events())
    store.start_episode(EpisodeLog(pk="sync"))
    store.queue_event("sync", events[0])
    with connect(store.url) as other:
        assert other.get_episode("sync").event_count == 1
    with pytest.raises(EpisodeStateError, match="not running"):
        store.queue_event("never-started", events[0])


async def test_a_server_lost_before_the_window_ends_is_raised_to_the_episode(
    redis_server: Callable[..., RedisServerProcess],
) -> None:
    events = await played_events()
    server = redis_server(persistent=True)
    store = connect(server.url)
    store.start_episode(EpisodeLog(pk="cut-off"))
    store.queue_event("cut-off", events[0])
    await window_ends()
    store.queue_event("cut-off", events[1])
    server.kill()
    await window_ends()  # the flush fails here, and the loop goes on
    with pytest.raises(StorageUnavailableError, match="lost the connection"):
        store.queue_event("cut-off", events[2])
    store.client.close()
    server.start()
    with connect(server.url) as again:
        # What landed before the server went is there; the episode is still "running",
        # for a resumed batch to mark incomplete and play again.
        assert again.get_episode("cut-off").event_count == 1
        assert again.get_episode("cut-off").status is EpisodeStatus.RUNNING


def test_appends_left_by_a_stopped_loop_go_out_with_the_next_loops(store: EpisodeStore) -> None:
    events = asyncio.run(played_events())
    store.start_episode(EpisodeLog(pk="two-loops"))

    async def queue_then_stop() -> None:
        store.queue_event("two-loops", events[0])
        # The loop stops after this turn: the write it scheduled for the window's end
        # never runs there.
        asyncio.get_running_loop().stop()

    first = asyncio.new_event_loop()
    try:
        first.run_until_complete(queue_then_stop())
    finally:
        first.close()

    async def queue_and_end_the_window() -> int:
        store.queue_event("two-loops", events[1])
        await window_ends()
        with connect(store.url) as other:
            return other.get_episode("two-loops").event_count

    assert asyncio.run(queue_and_end_the_window()) == 2
    assert store.read_events("two-loops") == [convert_completed_event(e) for e in events[:2]]


async def test_a_write_in_the_window_does_not_split_the_appends_after_it(
    store: EpisodeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write flushing the queue inside the window leaves the one write at the window's
    end for what is queued after it: a second one scheduled then would split them."""
    monkeypatch.setattr(queued, "FLUSH_WINDOW_S", 0.5)  # longer than any turn here
    events = await played_events()
    for episode_id in ("a", "b"):
        store.start_episode(EpisodeLog(pk=episode_id))
    seen: list[int] = []

    async def a() -> None:
        store.queue_event("a", events[0])
        await asyncio.sleep(0)
        store.queue_event("a", events[1])  # the next turn: written when the window ends

    async def b() -> None:
        store.start_episode(EpisodeLog(pk="c"))  # a write: the queue goes out now
        store.queue_event("b", events[0])
        await asyncio.sleep(0)
        with connect(store.url) as other:  # a's second still waits for the window
            seen.append(other.get_episode("a").event_count)

    await asyncio.gather(a(), b())
    before = store.client.info("commandstats")["cmdstat_evalsha"]["calls"]
    await window_ends()
    assert store.client.info("commandstats")["cmdstat_evalsha"]["calls"] - before == 1
    assert seen == [1]
    assert (store.get_episode("a").event_count, store.get_episode("b").event_count) == (2, 1)


@pytest.mark.parametrize(
    ("plant", "refusal"),
    [
        pytest.param(lambda c: c.set(episode_events_key("odd"), "junk"), "WRONGTYPE", id="stream"),
        pytest.param(lambda c: c.set(EpisodeLog.redis_key("odd"), "junk"), "WRONGTYPE", id="hash"),
        pytest.param(
            lambda c: c.hset(EpisodeLog.redis_key("odd"), "event_count", "007"),
            "not an integer",
            id="count",
        ),
    ],
)
async def test_an_append_to_keys_the_store_did_not_write_is_refused_alone(
    store: EpisodeStore, plant: Callable[[Any], object], refusal: str
) -> None:
    """The window's other appends go out; that one is refused as Redis refuses it."""
    events = await played_events()
    for episode_id in ("odd", "fine"):
        store.start_episode(EpisodeLog(pk=episode_id))
    plant(store.client)
    store.queue_event("odd", events[0])
    store.queue_event("fine", events[0])
    store.queue_event("odd", events[1])
    await window_ends()
    with pytest.raises(redis.ResponseError, match=refusal):
        store.queue_event("odd", events[2])
    assert [e.event_id for e in store.read_events("fine")] == [events[0].event_id]


@functools.cache
def one_event() -> CompletedEvent:
    return asyncio.run(played_events())[0]


# Event counts another writer may have left: integer texts of every size HINCRBY takes and
# beyond (its overflow), around the digits the script counts up itself, and texts that
# are no integer to HINCRBY.
COUNT_TEXTS = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63).map(str),
    st.integers(min_value=-(10**14), max_value=10**14).map(str),
    st.sampled_from(["0", "9", "19", "99", "-1", "-10", "9999999999999", "-999999999999"]),
    st.sampled_from(["99999999999999", "007", "-0", "+5", " 5", "5 ", "1e3", "1.0", "", "x"]),
)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(count=st.none() | COUNT_TEXTS)
def test_a_queued_event_counts_up_as_hincrby_does(store: EpisodeStore, count: str | None) -> None:
    """Whatever count a running episode's hash holds (or none), a queued event leaves it
    as HINCRBY by one leaves it, or is refused, writing nothing, as HINCRBY refuses it."""
    store.client.flushdb()
    keys = {pk: EpisodeLog.redis_key(pk) for pk in ("counted", "twin")}
    for pk, key in keys.items():
        store.start_episode(EpisodeLog(pk=pk))
        if count is None:
            store.client.hdel(key, "event_count")
        else:
            store.client.hset(key, "event_count", count)
    try:
        store.client.hincrby(keys["twin"], "event_count", 1)
    except redis.ResponseError as error:
        with pytest.raises(redis.ResponseError) as refused:
            store.queue_event("counted", one_event())  # outside a loop: written at once
        assert str(error) in str(refused.value)
        assert store.client.hget(keys["counted"], "event_count") == count
        assert store.client.exists(episode_events_key("counted")) == 0
    else:
        store.queue_event("counted", one_event())
        counted = store.client.hget(keys["counted"], "event_count")
        assert counted == store.client.hget(keys["twin"], "event_count")
        assert store.client.xlen(episode_events_key("counted")) == 1


async def test_scripts_the_server_lost_are_loaded_again(store: EpisodeStore) -> None:
    """A server that lost the store's scripts (SCRIPT FLUSH, a restart) gets each loaded
    again by the write that needs it: a start, the queued appends, one append, an end."""
    events = await played_events()
    store.client.script_flush()
    store.start_episode(EpisodeLog(pk="lost"))
    store.client.script_flush()
    store.queue_event("lost", events[0])
    await window_ends()
    store.client.script_flush()
    store.append_event("lost", events[1])
    store.client.script_flush()
    finished = store.finish_episode("lost", turns_played=2)
    assert finished.event_count == 2
    assert [e.event_id for e in store.read_events("lost")] == [e.event_id for e in events[:2]]
