"""The social runner stores its episodes through `EpisodeRecorder` as they are played."""

from __future__ import annotations

import json

import pytest
from storage_episodes_support import NAMES, flat_agents, flat_spec

from sotopia_are.evaluation import AgentRating, DimensionScore, Evaluation
from sotopia_are.messages import AgentAction
from sotopia_are.record import Verdict, record_of_result
from sotopia_are.simulation.data_handler.exporter import convert_completed_event
from sotopia_are.social import AgentTurn, CallRecord, export_episode, run_episode, run_episodes
from sotopia_are.storage import (
    STATUS_KEY,
    EpisodeRecorder,
    EpisodeStatus,
    EpisodeStore,
    StorageError,
    export_episode_json,
)


async def test_storage_recorder_streams_a_real_episode(store: EpisodeStore) -> None:
    spec = flat_spec("flat-1")
    recorder = EpisodeRecorder(store, tag="demo", models={NAMES[0]: "openai/test-model"})
    recorder.start(spec, scenario_id="fridge")
    result = await run_episode(spec, flat_agents(spec), sinks=[recorder])
    stored = store.get_episode("flat-1")
    assert stored.status is EpisodeStatus.COMPLETE
    assert stored.termination_reason == result.reason
    assert stored.models == ["openai/test-model", "", ""]
    assert stored.event_count == len(result.events) > 5
    assert store.read_events("flat-1") == [convert_completed_event(e) for e in result.events]
    assert store.episode_ids(tag="demo", scenario="fridge", model="openai/test-model") == ["flat-1"]
    assert stored.usage["calls"] == 0 and stored.cost_usd is None
    # ARE JSON from the store is what the live run exports, plus the stored status.
    stored_json = json.loads(export_episode_json(store, "flat-1"))
    assert stored_json["metadata"]["runner_config"].pop(STATUS_KEY) == "complete"
    assert stored_json == json.loads(export_episode(result))
    loaded = store.load("flat-1")
    assert loaded.spec == spec and loaded.transcript() == result.transcript()
    assert [e.event_id for e in loaded.events] == [e.event_id for e in result.events]


async def test_storage_recorder_ends_an_episode_in_one_write(store: EpisodeStore) -> None:
    spec = flat_spec("atomic")
    recorder = EpisodeRecorder(store)
    recorder.start(spec)
    with pytest.raises(TypeError):
        store.finish_episode("atomic", calls=[{"n": 1}, {"n": object()}])
    # Nothing of the end-of-episode write landed: no call, and still running.
    assert store.read_calls("atomic") == []
    assert store.get_episode("atomic").status is EpisodeStatus.RUNNING
    result = await run_episode(spec, flat_agents(spec))
    recorder.on_episode_end("atomic", result)
    assert store.get_episode("atomic").status is EpisodeStatus.COMPLETE


async def test_storage_recorder_streams_calls_as_they_are_made(store: EpisodeStore) -> None:
    spec = flat_spec("streamed")
    recorder = EpisodeRecorder(store)
    recorder.start(spec)

    def call(n: int) -> CallRecord:
        return CallRecord(
            model="openai/x", template="t", messages=[], latency_s=0.5, prompt_tokens=n,
            completion_tokens=1,
        )  # fmt: skip

    recorder.on_call("streamed", call(3))
    # Stored now, while the episode runs (a dead process loses none of it) ...
    assert store.read_calls("streamed") == [call(3).model_dump(mode="json")]
    # ... and a fresh start drops them with the stored events, as it says.
    store.mark_incomplete("streamed")
    recorder.start(spec)
    assert store.read_calls("streamed") == []
    recorder.on_call("streamed", call(5))
    recorder.on_call("streamed", call(7))
    result = await run_episode(spec, flat_agents(spec))
    recorder.on_episode_end("streamed", result)
    # The end writes no call again; the usage is the streamed calls'.
    assert store.read_calls("streamed") == [call(n).model_dump(mode="json") for n in (5, 7)]
    stored = store.get_episode("streamed")
    assert stored.usage["calls"] == 2 and stored.usage["prompt_tokens"] == 12
    assert [c.prompt_tokens for c in store.load("streamed").calls] == [5, 7]


async def test_storage_recorder_batch_and_failed_episode(store: EpisodeStore) -> None:
    class Broken:
        name = NAMES[1]

        async def act(self, turn: AgentTurn) -> AgentAction:
            raise RuntimeError("model went away")

        def call_records(self) -> tuple[CallRecord, ...]:
            return ()

    specs = [flat_spec(f"b-{n}", seed=n) for n in range(3)]
    recorder = EpisodeRecorder(store, tag="batch")

    def agents(spec):  # type: ignore[no-untyped-def]
        cast = flat_agents(spec)
        if spec.episode_id == "b-2":
            cast[NAMES[1]] = Broken()
        return cast

    results = await run_episodes(specs, agents, sinks=[recorder])
    assert [r.status for r in results] == ["complete", "complete", "failed"]
    assert store.completed_episode_ids("batch") == {"b-0", "b-1"}
    failed = store.get_episode("b-2")
    assert failed.status is EpisodeStatus.FAILED and "model went away" in failed.error
    assert store.read_events("b-2") == [convert_completed_event(e) for e in results[2].events]


async def test_storage_recorder_saves_the_evaluation(store: EpisodeStore) -> None:
    spec = flat_spec("rated")
    recorder = EpisodeRecorder(store, evaluator_model="openai/judge")
    recorder.start(spec)
    result = await run_episode(spec, flat_agents(spec), sinks=[recorder])
    goal = DimensionScore.of("goal", 0, 10, [6, 8], ["ok", "good"])
    evaluation = Evaluation(
        rubric="goal-only",
        model="openai/judge",
        agent_names=NAMES,
        samples=2,
        valid_samples=2,
        ratings=[AgentRating.of(name, [goal]) for name in NAMES],
    )
    verdict = Verdict(
        judge_model="openai/judge",
        rubric="goal-only",
        evaluation=evaluation,
        termination_reason=result.reason,
    )
    rated = recorder.save_verdict(verdict, "rated")
    assert rated.scores[NAMES[0]] == {"goal": 7.0, "overall_score": 7.0}
    assert store.get_episode("rated").scores == rated.scores
    assert store.load("rated") == rated == record_of_result(result).with_verdict(verdict)
    # A second judge adds its verdict; the same judge again is refused, nothing changed.
    second = verdict.model_copy(update={"judge_model": "openai/other"})
    both = store.add_verdict("rated", second)
    assert [v.judge_model for v in both.verdicts] == ["openai/judge", "openai/other"]
    with pytest.raises(ValueError, match="already has a verdict"):
        store.add_verdict("rated", verdict)
    assert store.load("rated") == both


def test_storage_episode_without_spec_cannot_be_exported(store: EpisodeStore) -> None:
    from sotopia_are.storage import EpisodeLog

    store.start_episode(EpisodeLog(pk="bare"))
    with pytest.raises(StorageError, match="no spec"):
        export_episode_json(store, "bare")
