"""An episode's steps taken in one round trip (from what the store last wrote of it) leave
Redis exactly as the general way does (WATCH, read, validate, rewrite the hash whole), key
by key and field by field, and give the same results and the same errors, whatever
happens in between: other writers, foreign keys, records that are not the stored one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_storage_export_lines import JSON, NUMBER, TEXT
from test_storage_queued_appends import window_ends

from sotopia_are.evaluation import (
    SOTOPIA_EVAL,
    AgentRating,
    DimensionScore,
    Evaluation,
    JudgeFailure,
)
from sotopia_are.llm import LLMCall, Sampling, Usage
from sotopia_are.record import EpisodeRecord, Verdict, load_record
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import EpisodeRecorder, EpisodeStore, usage_summary
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.errors import StorageUnavailableError
from sotopia_are.storage.keys import EPISODES_BY_TIME, episode_index_key
from sotopia_are.storage.store.written import STEP_SHA

LEGACY = Path(__file__).parents[1] / "data" / "legacy" / "episodes-v0.jsonl"
PKS = ["p0", "p1"]


def _records() -> dict[str, EpisodeRecord]:
    """Per pk, a played record with calls (its verdicts apart)."""
    rated = load_record(LEGACY.read_text(encoding="utf-8").splitlines()[2])
    return {
        pk: rated.model_copy(
            update={
                "episode_id": pk,
                "spec": rated.spec.replace(episode_id=pk),
                "tag": "twins",
                "verdicts": (),
            }
        )
        for pk in PKS
    }


RECORDS = _records()
FIRST = load_record(LEGACY.read_text(encoding="utf-8").splitlines()[2]).verdicts[0]
VERDICTS = [FIRST, FIRST.model_copy(update={"judge_model": "openai/second-judge"})]


class Twin:
    """One store, its clock counting from the same time as its twin's: a tick a reading,
    or (``steady``) a tick a step :func:`take` takes, for steps the two ways take with
    different numbers of readings (the appends' own time, which their episode's end
    overwrites, is read once per round trip)."""

    def __init__(self, client: redis.Redis[str], *, general: bool, steady: bool = False) -> None:
        ticks = iter(range(1_700_000_000, 1_800_000_000))
        self.now = 1_700_000_000.0
        clock = (lambda: self.now) if steady else (lambda: float(next(ticks)))
        self.store = EpisodeStore(client, location="the store", clock=clock)
        if general:
            self.store._written.capacity = 0  # every step the general way
        self.recorder = EpisodeRecorder(self.store, tag="twins", models=RECORDS["p0"].models)


def dump(client: redis.Redis[str]) -> dict[str, Any]:
    """Every key: its type and content (stream entries without their ids, which hold the
    time they were added)."""
    contents: dict[str, Any] = {}
    for key in sorted(client.scan_iter()):
        kind = client.type(key)
        if kind == "hash":
            value: Any = client.hgetall(key)
        elif kind == "set":
            value = sorted(client.smembers(key))
        elif kind == "zset":
            value = client.zrange(key, 0, -1, withscores=True)
        elif kind == "stream":
            value = [fields for _, fields in client.xrange(key)]
        else:
            value = client.dump(key)
        contents[key] = (kind, value)
    return contents


def outcome(action: Callable[[], Any]) -> Any:
    try:
        return ("ok", action())
    except Exception as error:  # the same error, raised by both
        return ("error", type(error), str(error))


Step = tuple[str, str, int]
STEPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["start", "event", "play", "finish", "fail", "verdict", "stale-verdict", "again",
             "evaluate", "update", "incomplete", "delete", "foreign-index", "foreign-calls",
             "foreign-hash", "other-writer", "queued", "queued-finish", "queued-fail",
             "foreign-events", "foreign-count", "foreign-by-time"]
        ),
        st.sampled_from(PKS),
        st.integers(0, 3),
    ),
    max_size=14,
)  # fmt: skip


def take(twin: Twin, step: Step) -> Any:
    """Take ``step`` (what a batch, or something else, does) on ``twin``'s store."""
    name, pk, n = step
    store, record = twin.store, RECORDS[pk]
    twin.now += 1.0
    usage = Usage.of(record.calls)

    def finish(status: EpisodeStatus) -> EpisodeLog:
        return store.finish_episode(
            pk,
            status=status,
            termination_reason=record.reason if status is EpisodeStatus.COMPLETE else "",
            error="" if status is EpisodeStatus.COMPLETE else "failed: a test",
            usage=usage_summary(usage),
            cost_usd=usage.cost_usd,
            calls=record.calls[: n + 1],
            turns_played=record.turns_played,
        )

    if name == "start":
        return twin.recorder.start(record.spec, scenario_id=record.scenario_id)
    if name == "event":  # its entry id holds the time it was added
        return bool(store.append_event(pk, record.events[n % len(record.events)]))
    if name == "play":  # a whole run, as a batch plays it
        twin.recorder.start(record.spec, scenario_id=record.scenario_id)
        for event in record.events:
            store.append_event(pk, event)
        return store.finish_episode(
            pk,
            termination_reason=record.reason,
            usage=usage_summary(usage),
            cost_usd=usage.cost_usd,
            calls=record.calls,
            turns_played=record.turns_played,
        )
    if name in ("queued", "queued-finish", "queued-fail"):
        # Events queued in a turn of the event loop, as a batch queues them; the episode's
        # end (if any) in the same turn, with another episode's events queued around it.
        other = PKS[1 - PKS.index(pk)]

        async def in_one_turn() -> Any:
            store.queue_event(other, record.events[0])
            for event in record.events[: n + 1]:
                store.queue_event(pk, event)
            if name == "queued":
                ended = None
            else:
                status = EpisodeStatus.COMPLETE if name == "queued-finish" else EpisodeStatus.FAILED
                ended = outcome(partial(finish, status))
                # (The other's refusal, if any, is known once its append is written: at
                # the window's end, not at this episode's end.)
                store.flush()
                store.queue_event(other, record.events[1])
            # The window's end, here: the loop may stop before it does, in one twin and
            # not in the other.
            store.flush()
            return ended

        return outcome(lambda: asyncio.run(in_one_turn()))
    if name == "finish":
        return finish(EpisodeStatus.COMPLETE)
    if name == "fail":
        return finish(EpisodeStatus.FAILED)
    if name in ("verdict", "again"):  # with the record a batch holds, or the same judge again
        return store.add_verdict(pk, VERDICTS[n % 2], stored=record, replace=name == "again")
    if name == "stale-verdict":
        return store.add_verdict(pk, VERDICTS[n % 2], stored=record.model_copy(update={"tag": "x"}))
    if name == "evaluate":  # the older layout's one verdict
        scores = {"Mara Quinn": {"overall_score": float(n)}}
        return store.save_evaluation(pk, scores=scores, evaluation={"n": n}, calls=record.calls[:1])
    if name == "update":
        update = [{"updated_at": 1.0}, {"pk": "p9"}, {"nope": 1}, {"scenario_codename": "c"}][n]
        return store.update_complete_episode(pk, update)
    if name == "incomplete":
        return store.mark_incomplete(pk)
    if name == "delete":
        return store.delete_episode(pk)
    if name == "foreign-index":  # a key of another type where a step writes an index entry
        status = ["running", "complete", "failed", "incomplete"][n]
        return store.client.set(episode_index_key("status", status), "junk")
    if name == "foreign-by-time":  # the episodes' time index as a key of another type
        store.client.delete(EPISODES_BY_TIME)
        if n % 2:
            return store.client.sadd(EPISODES_BY_TIME, pk)
        return store.client.set(EPISODES_BY_TIME, "junk")
    if name == "foreign-calls":
        return store.client.set(EpisodeLog(pk=pk).calls_key, "junk")
    if name == "foreign-events":
        return store.client.set(EpisodeLog(pk=pk).events_key, "junk")
    if name == "foreign-count":  # an event count HINCRBY refuses, or one it takes
        return store.client.hset(EpisodeLog.redis_key(pk), "event_count", ["007", "41"][n % 2])
    if name == "foreign-hash":  # the episode's hash replaced by a key of another type
        store.client.delete(EpisodeLog.redis_key(pk))
        return store.client.rpush(EpisodeLog.redis_key(pk), "junk")
    # Another process changes the stored record (through its own store).
    return store.client.hset(EpisodeLog.redis_key(pk), "scenario_codename", f"renamed {n}")


def _same_as_the_general_way(
    twins: tuple[redis.Redis[str], redis.Redis[str]], steps: list[Step], *, steady: bool
) -> None:
    fast_client, general_client = twins
    fast_client.flushdb()
    general_client.flushdb()
    fast = Twin(fast_client, general=False, steady=steady)
    general = Twin(general_client, general=True, steady=steady)
    for step in steps:
        assert outcome(partial(take, fast, step)) == outcome(partial(take, general, step)), step
        assert dump(fast_client) == dump(general_client), step


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS)
def test_steps_leave_redis_as_the_general_way_does(
    twins: tuple[redis.Redis[str], redis.Redis[str]], steps: list[Step]
) -> None:
    _same_as_the_general_way(twins, steps, steady=True)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS.map(lambda steps: [s for s in steps if not s[0].startswith("queued")]))
@example(steps=[("play", "p0", 0), ("verdict", "p0", 0), ("again", "p0", 1)])
def test_steps_write_each_time_where_the_general_way_does(
    twins: tuple[redis.Redis[str], redis.Redis[str]], steps: list[Step]
) -> None:
    """With a clock that ticks at every reading, a time written to the wrong field (the
    verdict's time as the update's) differs; the steps queuing events in a loop turn read
    the clock a different number of times the two ways, so they are left out here."""
    _same_as_the_general_way(twins, steps, steady=False)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    scenario_id=TEXT,
    profiles=st.lists(TEXT, max_size=3),
    metadata=st.dictionaries(TEXT, JSON, max_size=3),
    general=st.booleans(),
    clock=st.sampled_from([1_700_000_000, 1_700_000_000.25, True]),
)
def test_a_recorder_s_start_stores_what_a_start_validating_its_record_again_does(
    twins: tuple[redis.Redis[str], redis.Redis[str]],
    scenario_id: str,
    profiles: list[str],
    metadata: dict[str, Any],
    general: bool,
    clock: Any,
) -> None:
    """``EpisodeRecorder.start`` makes its record by validation and has the start take it
    as it is (``validated``, the spec's JSON not validated again): the same record, and
    the same hash, as ``start_episode`` of the record built whole and validated again,
    the clock's reading (of any type) validated alike; again over an episode that failed
    (the general way)."""
    clients = twins
    for client in clients:
        client.flushdb()
    record = RECORDS["p0"]
    stores = [EpisodeStore(client, location="the store", clock=lambda: clock) for client in clients]
    if general:
        for store in stores:
            store._written.capacity = 0
    recorder = EpisodeRecorder(stores[0], tag="twins", models=record.models)
    sampling = {name: Sampling(temperature=0.5) for name in record.spec.agent_names[:1]}
    recorder.sampling = sampling
    for attempt in range(2):
        started = [
            recorder.start(
                record.spec, scenario_id=scenario_id, agent_profiles=profiles, metadata=metadata
            ),
            stores[1].start_episode(
                EpisodeLog(
                    pk="p0",
                    tag="twins",
                    scenario_id=scenario_id or record.spec.name or "p0",
                    agents=list(record.spec.agent_names),
                    agent_profiles=profiles,
                    models=[record.models.get(n, "") for n in record.spec.agent_names],
                    agent_sampling={
                        name: s.model_dump(mode="json") for name, s in sampling.items()
                    },
                    seed=record.spec.seed,
                    spec=record.spec.model_dump(mode="json"),
                    metadata=metadata,
                    record_version=record.version,
                )
            ),
        ]
        assert started[0].model_dump() == started[1].model_dump()
        assert started[0].attempt == attempt + 1
        assert isinstance(started[0].created_at, float)
        assert dump(clients[0]) == dump(clients[1])
        for store in stores:
            store.finish_episode("p0", status=EpisodeStatus.FAILED, error="failed: a test")


def test_a_batch_s_steps_take_one_round_trip_each(
    twins: tuple[redis.Redis[str], redis.Redis[str]],
) -> None:
    """The usual run — start, events, end, verdict — takes the one-round-trip steps (and
    leaves what the general way leaves)."""
    fast_client, general_client = twins
    fast, general = Twin(fast_client, general=False), Twin(general_client, general=True)
    fast_client.config_resetstat()
    take(fast, ("play", "p0", 0))
    take(fast, ("verdict", "p0", 0))
    stats = fast_client.info("commandstats")
    assert "cmdstat_watch" not in stats and "cmdstat_multi" not in stats
    take(general, ("play", "p0", 0))
    take(general, ("verdict", "p0", 0))
    assert "cmdstat_watch" in general_client.info("commandstats")
    assert dump(fast_client) == dump(general_client)


def test_an_episode_s_end_carries_its_queued_events(
    twins: tuple[redis.Redis[str], redis.Redis[str]],
) -> None:
    """A batch finishes an episode in the loop turn that queued its last events: they go
    in the finish's round trip (one EVALSHA), another episode's stay queued for the
    window's end, and Redis ends as the general way leaves it."""
    fast_client, general_client = twins
    fast = Twin(fast_client, general=False, steady=True)
    general = Twin(general_client, general=True, steady=True)
    for twin in (fast, general):
        for pk in PKS:
            take(twin, ("start", pk, 0))
    record = RECORDS["p0"]

    async def end_p0(twin: Twin, client: redis.Redis[str]) -> tuple[int, int, int]:
        store = twin.store
        store.queue_event("p1", record.events[0])
        for event in record.events:
            store.queue_event("p0", event)
        before = client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
        finished = store.finish_episode(
            "p0", termination_reason=record.reason, calls=record.calls, turns_played=3
        )
        after = client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
        p1_before_the_window_ends = client.xlen(EpisodeLog(pk="p1").events_key)
        await window_ends()
        assert client.xlen(EpisodeLog(pk="p1").events_key) == 1
        return finished.event_count, after - before, p1_before_the_window_ends

    assert asyncio.run(end_p0(fast, fast_client)) == (len(record.events), 1, 0)
    count, _, p1_events = asyncio.run(end_p0(general, general_client))
    assert (count, p1_events) == (len(record.events), 1)  # flushed before the general way
    assert dump(fast_client) == dump(general_client)


def test_a_finish_that_fails_keeps_the_events_it_would_have_carried(
    twins: tuple[redis.Redis[str], redis.Redis[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finish's round trip fails (the server gone): the episode's queued events are
    written at the window's end, as the flush before the finish wrote them, and the
    episode stays running with them."""
    client, _ = twins
    twin = Twin(client, general=False, steady=True)
    take(twin, ("start", "p0", 0))
    record = RECORDS["p0"]
    store = twin.store
    sent = store._evalsha

    def cut_steps(sha: str, script: str, keys: Any, args: Any) -> Any:
        if sha == STEP_SHA:
            raise redis.ConnectionError("the server went away")
        return sent(sha, script, keys, args)

    async def end_p0() -> None:
        for event in record.events:
            store.queue_event("p0", event)
        monkeypatch.setattr(store, "_evalsha", cut_steps)
        with pytest.raises(StorageUnavailableError):
            store.finish_episode("p0", termination_reason=record.reason, calls=record.calls)
        monkeypatch.setattr(store, "_evalsha", sent)
        await window_ends()

    asyncio.run(end_p0())
    stored = client.hgetall(EpisodeLog.redis_key("p0"))
    assert (stored["status"], stored["event_count"]) == ("running", str(len(record.events)))
    assert client.xlen(EpisodeLog(pk="p0").events_key) == len(record.events)


@pytest.mark.parametrize(
    "plant",
    ["foreign-events", "foreign-count", "other-writer", "incomplete", "delete", "foreign-hash",
     "foreign-calls", "foreign-index", "foreign-by-time", "event"],
)  # fmt: skip
@pytest.mark.parametrize("n", [0, 1])
def test_queued_events_the_finish_would_carry_are_refused_as_the_appends_refuse_them(
    twins: tuple[redis.Redis[str], redis.Redis[str]], plant: str, n: int
) -> None:
    """Whatever is planted between an episode's start and the loop turn that queues its
    last events and ends it, the end (and the events) give what the general way gives."""
    fast_client, general_client = twins
    fast = Twin(fast_client, general=False, steady=True)
    general = Twin(general_client, general=True, steady=True)
    for step in [
        ("start", "p0", 0),
        ("start", "p1", 0),
        (plant, "p0", n),
        ("queued-finish", "p0", n),
    ]:
        assert outcome(partial(take, fast, step)) == outcome(partial(take, general, step)), step
        assert dump(fast_client) == dump(general_client), step


def test_a_text_moved_to_the_next_field_is_another_hash(
    twins: tuple[redis.Redis[str], redis.Redis[str]],
) -> None:
    """The step's check of the stored hash knows where each field's text ends: the last
    character of one moved to the start of the next (the texts joined give the same
    bytes) is a hash the store did not write, and the step goes the general way."""
    fast_client, general_client = twins
    fast, general = Twin(fast_client, general=False), Twin(general_client, general=True)
    key = EpisodeLog.redis_key("p0")
    for twin in (fast, general):
        take(twin, ("play", "p0", 0))
    written = fast.store._written.get(key)
    assert written is not None
    checked = [name for name in written.fields if name not in written.volatile()]
    assert checked[checked.index("termination_reason") + 1] == "error"
    reason = written.fields["termination_reason"]
    assert reason and written.fields["error"] == ""
    for client in twins:
        client.hset(key, mapping={"termination_reason": reason[:-1], "error": reason[-1]})
    fast_client.config_resetstat()
    results = [
        outcome(partial(twin.store.add_verdict, "p0", FIRST, stored=RECORDS["p0"]))
        for twin in (fast, general)
    ]
    assert "cmdstat_watch" in fast_client.info("commandstats")
    assert results[0] == results[1]
    assert dump(fast_client) == dump(general_client)
    assert fast.store.load("p0").reason == reason[:-1]


def test_calls_of_mixed_forms_are_appended_as_the_general_way_appends_them(
    twins: tuple[redis.Redis[str], redis.Redis[str]],
) -> None:
    """An episode's end sends a call entry with the fields and form of the one before it
    as its payload alone: mappings (no form) and records (marked), in any order, land as
    the general way writes them, and read back as given."""
    fast_client, general_client = twins
    record = RECORDS["p0"]
    as_data = [call.model_dump(mode="json") for call in record.calls[:3]]
    calls = [as_data[0], record.calls[0], record.calls[1], as_data[1], as_data[2], record.calls[2]]
    results = []
    for client, general in ((fast_client, False), (general_client, True)):
        twin = Twin(client, general=general)
        twin.recorder.start(record.spec, scenario_id=record.scenario_id)
        twin.store.finish_episode("p0", termination_reason=record.reason, calls=calls)
        results.append(twin.store.read_calls("p0"))
    assert dump(fast_client) == dump(general_client)
    fast_calls, general_calls = results
    assert fast_calls == general_calls
    assert len(fast_calls) == len(calls)


@st.composite
def verdicts(draw: st.DrawFn) -> Verdict:
    """A random judge's verdict on RECORDS' episodes: a built-in rubric's dimensions in
    its order or sorted (what reading an older store back puts in the rubric's order),
    or a rubric of its own; scores of one sample or several, failures, warnings and calls
    of any JSON (non-finite floats included)."""
    names = list(RECORDS["p0"].spec.agent_names)
    rubric = draw(st.sampled_from(["sotopia_eval", "goal_only", "mine"]))
    dimensions = (
        list(SOTOPIA_EVAL.dimension_names)
        if rubric == "sotopia_eval"
        else draw(st.lists(st.sampled_from(["goal", "b", "a"]), min_size=1, unique=True))
    )
    if draw(st.booleans()):
        dimensions = sorted(dimensions)
    samples = draw(st.integers(1, 3))

    def score() -> DimensionScore:
        scores = draw(st.lists(st.integers(-10, 10), min_size=samples, max_size=samples))
        reasons = draw(st.lists(TEXT, min_size=samples, max_size=samples))
        return DimensionScore.of_valid_scores("d", -10, 10, scores, reasons)

    ratings = [
        AgentRating.of_valid_scores(
            name, [score().model_copy(update={"name": d}) for d in dimensions]
        )
        for name in names
    ] * draw(st.integers(0, 1))
    calls = draw(
        st.lists(
            st.builds(
                LLMCall,
                model=TEXT,
                template=TEXT,
                messages=st.lists(
                    st.fixed_dictionaries({"role": st.just("user"), "content": TEXT}),
                    max_size=2,
                ),
                params=st.dictionaries(TEXT, JSON, max_size=3),
                raw_text=st.none() | TEXT,
                parsed=JSON,
                cost_usd=st.none() | st.floats(0, 1e-3),
                latency_s=NUMBER,
            ),
            max_size=2,
        )
    )
    evaluation = Evaluation(
        rubric=rubric,
        model="openai/judge",
        agent_names=names,
        samples=samples,
        valid_samples=samples if ratings else 0,
        ratings=ratings,
        failures=[] if ratings else [JudgeFailure(sample=1, error_type="E", error=draw(TEXT))],
        calls=calls,
        warnings=draw(st.lists(TEXT, max_size=2)),
    )
    return Verdict(
        judge_model=draw(st.sampled_from(["openai/judge", "openai/other"])),
        rubric=rubric,
        prompt=draw(TEXT),
        evaluation=evaluation,
        termination_reason=draw(st.none() | TEXT),
        sampling=draw(st.none() | st.builds(Sampling, temperature=st.floats(0, 2))),
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=verdicts(), second=verdicts())
def test_a_batch_s_verdicts_are_stored_and_exported_as_the_general_way_reads_them(
    twins: tuple[redis.Redis[str], redis.Redis[str]], first: Verdict, second: Verdict
) -> None:
    """The verdict step of an episode the store just finished takes the verdict as
    reading its JSON back gives it (without validating that JSON again): whatever the
    verdict, Redis holds what the general way writes, and its export line is the record
    read back."""
    fast_client, general_client = twins
    fast_client.flushdb()
    general_client.flushdb()
    fast, general = Twin(fast_client, general=False), Twin(general_client, general=True)
    for twin in (fast, general):
        take(twin, ("play", "p0", 0))
    for verdict in (first, second):
        results = [
            outcome(partial(twin.store.add_verdict, "p0", verdict, stored=RECORDS["p0"]))
            for twin in (fast, general)
        ]
        assert results[0] == results[1]
        assert dump(fast_client) == dump(general_client)
    lines = [line.decode() for line in fast.store.iter_export_lines(["p0"])]
    assert lines == [fast.store.load("p0").to_json()]


class NotedVerdict(Verdict):
    """A verdict of a subclass: dumped with its own field, read back as a plain one."""

    note: str = "a field reading back does not know"


def test_a_verdict_of_a_subclass_is_stored_as_the_general_way_reads_it(
    twins: tuple[redis.Redis[str], redis.Redis[str]],
) -> None:
    fast_client, general_client = twins
    fast, general = Twin(fast_client, general=False), Twin(general_client, general=True)
    noted = NotedVerdict(**dict(FIRST))
    for twin in (fast, general):
        take(twin, ("play", "p0", 0))
    results = [
        outcome(partial(twin.store.add_verdict, "p0", noted, stored=RECORDS["p0"]))
        for twin in (fast, general)
    ]
    assert results[0] == results[1]
    assert dump(fast_client) == dump(general_client)
