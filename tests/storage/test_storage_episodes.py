"""The episode lifecycle, event streams, index filters and resume support."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.storage import (
    EpisodeExistsError,
    EpisodeLog,
    EpisodeStateError,
    EpisodeStatus,
    EpisodeStore,
    RecordNotFoundError,
    StorageConflictError,
    stable_episode_id,
)
from sotopia_are.storage.events import decode_event, encode_event
from sotopia_are.storage.store import WRITE_ATTEMPTS


def event(number: int, text: str = "hello") -> ExportedCompletedEvent:
    return ExportedCompletedEvent.model_validate(
        {
            "class_name": "CompletedEvent",
            "event_type": "AGENT",
            "event_time": float(number),
            "event_id": f"ev-{number}",
            "dependencies": [],
            "event_relative_time": float(number),
            "action": {
                "action_id": f"act-{number}",
                "app": "ConversationApp",
                "function": "act",
                "operation_type": "WRITE",
                "args": [{"name": "argument", "value": text, "value_type": "str"}],
            },
            "metadata": {"return_value": None, "return_value_type": None},
        }
    )


def episode(pk: str, **fields: object) -> EpisodeLog:
    defaults: dict[str, object] = {
        "tag": "batch-1",
        "scenario_id": "plot",
        "agents": ["Ann", "Bo"],
        "models": ["gpt-x", ""],
    }
    return EpisodeLog(pk=pk, **{**defaults, **fields})


def test_storage_episode_lifecycle(store: EpisodeStore) -> None:
    started = store.start_episode(episode("e1"))
    assert started.status is EpisodeStatus.RUNNING and started.attempt == 1
    ids = [store.append_event("e1", event(n)) for n in range(3)]
    assert ids == sorted(ids)
    store.append_call("e1", {"model": "gpt-x", "prompt_tokens": 3})
    assert store.get_episode("e1").event_count == 3
    finished = store.finish_episode(
        "e1", termination_reason="max turns", usage={"calls": 1}, cost_usd=0.5
    )
    assert finished.status is EpisodeStatus.COMPLETE
    assert finished.finished_at is not None and finished.event_count == 3
    assert store.get_episode("e1") == finished
    assert store.read_events("e1") == [event(n) for n in range(3)]
    assert store.read_calls("e1") == [{"model": "gpt-x", "prompt_tokens": 3}]
    rated = store.save_evaluation(
        "e1", scores={"Ann": {"goal": 7, "overall_score": 7}}, evaluation={"comments": "ok"}
    )
    assert rated.scores == {"Ann": {"goal": 7.0, "overall_score": 7.0}}
    assert rated.status is EpisodeStatus.COMPLETE and rated.evaluated_at is not None


def test_storage_events_encode_deterministically() -> None:
    text = encode_event(event(1, 'ünï "quoted"'))
    assert text == encode_event(event(1, 'ünï "quoted"'))
    assert decode_event(text) == event(1, 'ünï "quoted"')


def test_storage_appends_need_a_running_episode_and_write_nothing_otherwise(
    store: EpisodeStore,
) -> None:
    with pytest.raises(EpisodeStateError, match="not running"):
        store.append_event("ghost", event(0))
    with pytest.raises(EpisodeStateError):
        store.append_call("ghost", {"model": "m"})
    assert store.client.dbsize() == 0
    store.start_episode(episode("e1"))
    store.finish_episode("e1", status=EpisodeStatus.FAILED, error="Bo raised")
    with pytest.raises(EpisodeStateError):
        store.append_event("e1", event(0))
    store.append_call("e1", {"judge": True})  # calls may follow the run (the judge's)
    with pytest.raises(EpisodeStateError, match="failed, not running"):
        store.finish_episode("e1")
    with pytest.raises(EpisodeStateError, match="not complete"):
        store.save_evaluation("e1", scores={}, evaluation={})
    store.start_episode(episode("e2"))
    with pytest.raises(ValueError, match="complete or failed"):
        store.finish_episode("e2", status=EpisodeStatus.INCOMPLETE)
    with pytest.raises(RecordNotFoundError):
        store.finish_episode("nope")


def test_storage_restart_rules(store: EpisodeStore) -> None:
    store.start_episode(episode("e1"))
    store.append_event("e1", event(0))
    with pytest.raises(EpisodeStateError, match="mark_interrupted"):
        store.start_episode(episode("e1"))
    store.mark_incomplete("e1")
    again = store.start_episode(episode("e1"))
    assert again.attempt == 2 and again.event_count == 0
    assert store.read_events("e1") == []  # a fresh attempt starts a fresh stream
    store.finish_episode("e1")
    with pytest.raises(EpisodeExistsError, match=r"already stored, complete.*replace=True"):
        store.start_episode(episode("e1"))
    assert store.delete_episode("e1") is True
    assert store.client.dbsize() == 0  # record, stream and index entries all gone
    assert store.delete_episode("e1") is False


def test_storage_list_and_filter_without_redisearch(store: EpisodeStore) -> None:
    clock = iter(range(100, 200))
    store._clock = lambda: float(next(clock))
    store.start_episode(episode("a", tag="t1", models=["gpt-x", "claude"]))
    store.start_episode(episode("b", tag="t1", scenario_id="other", models=["llama", ""]))
    store.start_episode(episode("c", tag="t2", agents=["Cy", "Di"]))
    store.finish_episode("a")
    store.finish_episode("c", status=EpisodeStatus.FAILED)
    assert store.episode_ids() == ["a", "b", "c"]
    assert store.episode_ids(tag="t1") == ["a", "b"]
    assert store.episode_ids(scenario="plot") == ["a", "c"]
    assert store.episode_ids(model="claude") == ["a"]
    assert store.episode_ids(agent="Cy") == ["c"]
    assert store.episode_ids(status="running") == ["b"]
    assert store.episode_ids(tag="t1", status=EpisodeStatus.COMPLETE) == ["a"]
    assert store.episode_ids(tag="nope") == []
    assert [e.pk for e in store.list_episodes(tag="t1", limit=1)] == ["a"]
    assert store.completed_episode_ids("t1") == {"a"}
    # An episode that changes status moves between the index sets, in one transaction.
    assert store.client.smembers("sotopia_are:index:episode:status:running") == {"b"}


def test_storage_mark_interrupted_and_resume(store: EpisodeStore) -> None:
    now = [1000.0]
    store._clock = lambda: now[0]
    tag = "resume-me"
    plan = [stable_episode_id(tag, "plot", str(n)) for n in range(4)]
    assert plan == [stable_episode_id(tag, "plot", str(n)) for n in range(4)]
    assert len(set(plan)) == 4
    # A first run completes two episodes and dies in the third.
    for pk in plan[:3]:
        store.start_episode(episode(pk, tag=tag))
        store.append_event(pk, event(0))
    store.finish_episode(plan[0])
    store.finish_episode(plan[1])
    now[0] = 1010.0
    assert store.mark_interrupted(tag=tag, idle_for=60) == []  # could still be alive
    assert store.mark_interrupted(tag="another-batch") == []
    assert store.mark_interrupted(tag=tag) == [plan[2]]
    left = store.get_episode(plan[2])
    assert left.status is EpisodeStatus.INCOMPLETE and "interrupted" in left.error
    assert store.read_events(plan[2]) == [event(0)]  # readable after the crash
    # The resumed run skips what is complete and reruns the rest.
    done = store.completed_episode_ids(tag)
    rerun = [pk for pk in plan if pk not in done]
    assert rerun == plan[2:]
    for pk in rerun:
        store.start_episode(episode(pk, tag=tag))
        store.finish_episode(pk)
    assert store.completed_episode_ids(tag) == set(plan)
    assert store.get_episode(plan[0]).attempt == 1
    assert store.get_episode(plan[2]).attempt == 2


def test_storage_follow_events_live(store: EpisodeStore) -> None:
    store.start_episode(episode("live"))

    def play() -> None:
        for n in range(5):
            time.sleep(0.01)
            store.append_event("live", event(n))
        store.finish_episode("live")

    writer = threading.Thread(target=play)
    writer.start()
    followed = list(store.follow_events("live", block_ms=50))
    writer.join()
    assert followed == [event(n) for n in range(5)]


def test_storage_save_replaces_and_reindexes_episodes(store: EpisodeStore) -> None:
    store.start_episode(episode("e1", tag="old"))
    record = store.get_episode("e1").replace(tag="new", status=EpisodeStatus.COMPLETE)
    store.save(record)
    assert store.episode_ids(tag="old") == []
    assert store.episode_ids(tag="new", status="complete") == ["e1"]


def test_storage_finish_writes_the_calls_and_the_status_together(store: EpisodeStore) -> None:
    store.start_episode(episode("e1"))
    store.append_event("e1", event(0))
    before = store.get_episode("e1")
    # The second call cannot be encoded: neither the first call nor the status lands.
    with pytest.raises(TypeError):
        store.finish_episode("e1", calls=[{"model": "gpt-x"}, {"model": object()}])
    assert store.get_episode("e1") == before and store.read_calls("e1") == []
    finished = store.finish_episode("e1", calls=[{"model": "gpt-x"}, {"model": "judge"}])
    assert finished.status is EpisodeStatus.COMPLETE
    assert store.read_calls("e1") == [{"model": "gpt-x"}, {"model": "judge"}]
    with pytest.raises(TypeError):
        store.save_evaluation("e1", scores={}, evaluation={}, calls=[{"bad": {1, 2}}])
    assert store.get_episode("e1") == finished and len(store.read_calls("e1")) == 2
    rated = store.save_evaluation("e1", scores={}, evaluation={}, calls=[{"model": "j2"}])
    assert rated.evaluated_at is not None and store.read_calls("e1")[-1] == {"model": "j2"}


def test_storage_gives_up_a_write_that_always_loses_to_another_writer(
    store: EpisodeStore,
) -> None:
    store.start_episode(episode("e1"))
    key = EpisodeLog.redis_key("e1")
    attempts = 0

    def contested(pipe: Any) -> None:
        nonlocal attempts
        attempts += 1
        store.client.hset(key, "updated_at", str(attempts))  # another writer, every time
        pipe.multi()
        pipe.hset(key, "status", "complete")

    with pytest.raises(StorageConflictError, match=f"after {WRITE_ATTEMPTS} attempts"):
        store._watched([key], contested)
    assert attempts == WRITE_ATTEMPTS
    assert store.get_episode("e1").status is EpisodeStatus.RUNNING
