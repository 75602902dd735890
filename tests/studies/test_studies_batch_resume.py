"""`batch(..., resume=True)` called as a library, against the embedded Redis: a resume skips
what is complete and rated and rates what is complete but unrated without replaying it;
a ``running`` episode idle for ``stale_after`` is played again while a fresh one is left to
its run; an episode started ``max_attempts`` times is given up and reported, fewer are
retried; existing episodes without ``resume`` are refused naming ``--resume``; and two
worker processes store what one does. (tests/cli covers the same through the CLI.)"""

import itertools
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import sotopia_are as sa
from sotopia_are.llm import RetryPolicy
from sotopia_are.storage import EpisodeLog, EpisodeRecorder, EpisodeStore, connect
from sotopia_are.studies import BatchError, BatchResult, plan_batch
from sotopia_are.testing import LocalLLMServer, Reply, ReplyLike

MODEL = "openai/test-model"
NAMES = ["Mara Quinn", "Teo Alvarez"]
LEAVE = json.dumps({"action_type": "leave", "argument": ""})
TOO_LONG = Reply.error(400, "maximum context length is 8192 tokens (context_length_exceeded)")
TAG = "r"


def spec(name: str) -> sa.EpisodeSpec:
    """A bakery spec named ``name``; its scenario ends with ``[name]``, so a rule can tell
    whose request it answers."""
    return sa.EpisodeSpec(
        name=name,
        scenario=f"A bakery before closing [{name}].",
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=2,
    )


def is_judge(body: Mapping[str, Any]) -> bool:
    return "impartial expert judge" in body["messages"][0]["content"]


def rating() -> str:
    return json.dumps(
        {n: {d.name: {"reasoning": "ok", "score": d.low} for d in sa.SOTOPIA_EVAL.dimensions}
         for n in NAMES}
    )  # fmt: skip


def answering(
    agents: Mapping[str, ReplyLike] | None = None, judge: Mapping[str, ReplyLike] | None = None
) -> Any:
    """A server rule: agents leave and the judge rates, but for the specs named in
    ``agents`` / ``judge``, answered with the reply given."""

    def rule(body: Mapping[str, Any]) -> ReplyLike:
        text = json.dumps(body["messages"])
        faults, usual = (judge or {}, rating()) if is_judge(body) else (agents or {}, LEAVE)
        return next((reply for name, reply in faults.items() if f"[{name}]" in text), usual)

    return rule


def config(server: LocalLLMServer) -> sa.LLMConfig:
    fast = RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.02)
    return sa.LLMConfig(api_base=server.url, timeout_s=5.0, retry=fast)


def run(
    store: EpisodeStore, server: LocalLLMServer, names: Sequence[str], **options: Any
) -> BatchResult:
    """The batch of the specs ``names`` under :data:`TAG`, in this process unless
    ``workers`` is given."""
    options = {"tag": TAG, "workers": 1, **options}
    return sa.batch([spec(n) for n in names], MODEL, store=store, config=config(server), **options)


def ids(names: Sequence[str], tag: str = TAG) -> dict[str, str]:
    """The stable episode id the batch of ``names`` gives each of them."""
    planned = plan_batch([spec(n) for n in names], dict.fromkeys(NAMES, MODEL), tag=tag)
    return {item.scenario_id: item.spec.episode_id for item in planned}


def stored(store: EpisodeStore, tag: str = TAG) -> dict[str, EpisodeLog]:
    """The batch's stored episodes by scenario (spec name)."""
    return {episode.scenario_id: episode for episode in store.list_episodes(tag=tag)}


def state(store: EpisodeStore, name: str, tag: str = TAG) -> tuple[sa.EpisodeStatus, int]:
    """The stored status of the batch's episode of spec ``name``, and how often it was started."""
    episode = stored(store, tag)[name]
    return episode.status, episode.attempt


def start_as_running(
    store: EpisodeStore, name: str, *, at: float, tag: str = TAG, interrupted: int = 0
) -> None:
    """Store the batch's episode of spec ``name`` as a run would that started it at time
    ``at`` and is still playing it (or was stopped ``interrupted`` times before, then
    started again), through a store whose clock reads ``at``."""
    (item,) = plan_batch([spec(name)], dict.fromkeys(NAMES, MODEL), tag=tag)
    # A second store on the same connection, its clock set back: not closed, as closing it
    # would close the connection it shares.
    then = EpisodeStore(store.client, location=store.location, clock=lambda: at)
    recorder = EpisodeRecorder(then, tag=tag, models=item.models)
    for _ in range(interrupted):
        recorder.start(item.spec)
        then.mark_incomplete(item.spec.episode_id)
    recorder.start(item.spec)


# -- complete episodes: skipped when rated, rated (not replayed) when not ----------------


def test_a_resume_skips_the_rated_and_rates_the_unrated_without_replaying_them(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    names = ["b0", "b1", "b2"]
    llm_server.rule = answering(judge={"b1": TOO_LONG})
    first = run(store, llm_server, names, judge_model=MODEL)
    assert first.unfinished == 1 and [o.unrated for o in first.outcomes].count(True) == 1
    before = stored(store)
    assert before["b1"].status is sa.EpisodeStatus.COMPLETE and not before["b1"].scores

    llm_server.rule = answering()
    sent = len(llm_server.chat_requests)
    resumed = run(store, llm_server, names, judge_model=MODEL, resume=True)
    plan = resumed.plan
    assert (plan.skipped, plan.rate_only, plan.to_play) == (2, 1, 0)
    assert [o.episode_id for o in resumed.outcomes] == [ids(names)["b1"]]
    assert not resumed.failed and resumed.unfinished == 0
    # Only the judge ran, once, on the unrated episode: no agent played a turn again.
    new = llm_server.chat_requests[sent:]
    assert len(new) == 1 and is_judge(new[0].body) and "[b1]" in json.dumps(new[0].body)
    after = stored(store)
    assert after["b1"].scores and after["b1"].attempt == 1
    assert after["b1"].event_count == before["b1"].event_count
    assert after["b1"].started_at == before["b1"].started_at
    # The rated ones are untouched, to the last field.
    assert {n: after[n] for n in ("b0", "b2")} == {n: before[n] for n in ("b0", "b2")}

    sent = len(llm_server.chat_requests)
    again = run(store, llm_server, names, judge_model=MODEL, resume=True)
    assert (again.plan.skipped, len(again.plan.pending), again.outcomes) == (3, 0, ())
    assert len(llm_server.chat_requests) == sent and stored(store) == after


def test_without_a_judge_a_resume_does_not_rate_complete_unrated_episodes(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = answering()
    assert not run(store, llm_server, ["b0"]).failed
    sent = len(llm_server.chat_requests)
    resumed = run(store, llm_server, ["b0"], resume=True)
    assert (resumed.plan.skipped, len(resumed.plan.pending), resumed.failed) == (1, 0, False)
    assert len(llm_server.chat_requests) == sent and not stored(store)["b0"].scores


# -- running episodes: stale ones played again, fresh ones left to their run ------------


def test_a_stale_running_episode_is_played_again_and_a_fresh_one_left_alone(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = answering()
    names = ["stale", "fresh", "new"]
    now = time.time()
    start_as_running(store, "stale", at=now - 3600)
    start_as_running(store, "fresh", at=now - 60)
    planned = ids(names)

    resumed = run(store, llm_server, names, resume=True, stale_after=600)
    assert resumed.plan.busy == {planned["fresh"]} and resumed.plan.stale_after == 600
    assert resumed.plan.to_play == 2 and not resumed.plan.given_up
    assert {o.episode_id for o in resumed.outcomes} == {planned["stale"], planned["new"]}
    assert all(o.status is sa.EpisodeStatus.COMPLETE for o in resumed.outcomes)
    # The one left to another run is not finished: the batch says so.
    assert resumed.failed and resumed.unfinished == 1
    after = stored(store)
    # The stale one was marked incomplete, then started again (its second attempt).
    assert state(store, "stale") == (sa.EpisodeStatus.COMPLETE, 2)
    assert state(store, "new") == (sa.EpisodeStatus.COMPLETE, 1)
    fresh = after["fresh"]
    assert (fresh.status, fresh.attempt, fresh.event_count) == (sa.EpisodeStatus.RUNNING, 1, 0)
    assert fresh.updated_at == now - 60
    assert not [r for r in llm_server.chat_requests if "[fresh]" in json.dumps(r.body)]

    # Once it has been idle for longer than stale_after, it is taken as left by a dead run.
    later = run(store, llm_server, names, resume=True, stale_after=30)
    assert not later.plan.busy and later.plan.skipped == 2
    assert [o.episode_id for o in later.outcomes] == [planned["fresh"]] and not later.failed
    assert state(store, "fresh") == (sa.EpisodeStatus.COMPLETE, 2)


# -- max_attempts: given up after that many starts, retried before ----------------------


def test_a_failing_episode_is_retried_until_max_attempts_then_given_up_and_reported(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    names = ["b0", "b1"]
    poisoned = ids(names)["b1"]
    llm_server.rule = answering(agents={"b1": TOO_LONG})
    first = run(store, llm_server, names, max_attempts=2)
    assert first.unfinished == 1 and stored(store)["b1"].status is sa.EpisodeStatus.FAILED

    second = run(store, llm_server, names, max_attempts=2, resume=True)
    assert (second.plan.skipped, second.plan.to_play, second.plan.given_up) == (1, 1, {})
    assert [(o.episode_id, o.status) for o in second.outcomes] == [
        (poisoned, sa.EpisodeStatus.FAILED)
    ]
    assert stored(store)["b1"].attempt == 2

    sent = len(llm_server.chat_requests)
    third = run(store, llm_server, names, max_attempts=2, resume=True)
    assert list(third.plan.given_up) == [poisoned] and third.plan.max_attempts == 2
    reason = third.plan.given_up[poisoned]
    assert "context_length_exceeded" in reason and reason.endswith("(started 2 times)")
    assert not third.plan.pending and third.outcomes == ()
    assert third.failed and third.unfinished == 1
    assert len(llm_server.chat_requests) == sent  # not played a third time
    assert state(store, "b1") == (sa.EpisodeStatus.FAILED, 2)

    # A higher limit plays it again; the server healed, it completes.
    llm_server.rule = answering()
    fourth = run(store, llm_server, names, max_attempts=3, resume=True)
    assert not fourth.failed and not fourth.plan.given_up
    assert state(store, "b1") == (sa.EpisodeStatus.COMPLETE, 3)


def test_an_interrupted_episode_is_given_up_exactly_when_started_max_attempts_times(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = answering()
    for started, limit in itertools.product(range(1, 4), range(1, 4)):
        tag = f"s{started}-m{limit}"
        start_as_running(store, "b0", at=time.time(), tag=tag, interrupted=started - 1)
        store.mark_incomplete(ids(["b0"], tag)["b0"])
        sent = len(llm_server.chat_requests)
        result = run(store, llm_server, ["b0"], tag=tag, resume=True, max_attempts=limit)
        if started >= limit:
            assert list(result.plan.given_up.values()) == [
                f"interrupted (started {started} times)"
            ], tag
            assert result.outcomes == () and result.unfinished == 1, tag
            assert len(llm_server.chat_requests) == sent, tag
            assert state(store, "b0", tag) == (sa.EpisodeStatus.INCOMPLETE, started), tag
        else:
            assert not result.plan.given_up and not result.failed, tag
            assert state(store, "b0", tag) == (sa.EpisodeStatus.COMPLETE, started + 1), tag


def test_max_attempts_below_one_is_refused_before_anything_is_stored(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    with pytest.raises(ValueError, match="max_attempts must be at least 1, got 0"):
        run(store, llm_server, ["b0"], max_attempts=0)
    assert not stored(store) and not llm_server.chat_requests


# -- existing episodes without resume ---------------------------------------------------


def test_existing_episodes_without_resume_are_refused_naming_resume(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = answering()
    assert not run(store, llm_server, ["b0", "b1"]).failed
    before = stored(store)
    sent = len(llm_server.chat_requests)
    # One new spec among them does not make it a new batch.
    with pytest.raises(BatchError) as refused:
        run(store, llm_server, ["b1", "b2"])
    message = str(refused.value)
    assert f"batch {TAG!r} already has 1 of these episodes" in message
    assert "resume=True" in message and "--resume" in message and "another tag" in message
    assert stored(store) == before and len(llm_server.chat_requests) == sent
    # Under another tag they are other episodes.
    assert not run(store, llm_server, ["b0", "b1"], tag="other").failed


# -- worker processes --------------------------------------------------------------------


def kept(store: EpisodeStore) -> dict[str, tuple[Any, ...]]:
    """What a batch stores of each episode, but its timings."""
    return {
        episode.scenario_id: (
            episode.pk, episode.status, episode.attempt, episode.turns_played,
            episode.event_count, episode.termination_reason, episode.error, episode.scores,
        )
        for episode in store.list_episodes(tag=TAG)
    }  # fmt: skip


def test_two_workers_store_what_one_does_and_resume_alike(
    llm_server: LocalLLMServer, storage_data_dir: str, tmp_path: Path
) -> None:
    names = [f"b{n}" for n in range(5)]
    records: dict[int, list[dict[str, tuple[Any, ...]]]] = {}
    for workers in (1, 2):
        llm_server.rule = answering(agents={"b1": TOO_LONG}, judge={"b2": TOO_LONG})
        with connect(data_dir=tmp_path / f"workers-{workers}") as store:
            first = run(store, llm_server, names[:4], judge_model=MODEL, workers=workers)
            assert first.workers == workers and first.unfinished == 2
            start_as_running(store, "b4", at=time.time() - 3600)  # as if left by a dead run
            records[workers] = [kept(store)]
            llm_server.rule = answering()
            resumed = run(store, llm_server, names, judge_model=MODEL, workers=workers, resume=True)
            assert not resumed.failed and resumed.workers == workers
            plan = resumed.plan
            assert (plan.skipped, plan.rate_only, plan.to_play) == (2, 1, 2)
            records[workers].append(kept(store))
    assert records[1] == records[2]
    assert set(records[1][1]) == set(names)
    assert all(r[1] is sa.EpisodeStatus.COMPLETE and r[-1] for r in records[1][1].values())
