"""The benchmark through litellm's real HTTP path and a real Redis: two models under test
against a partner on SOTOPIA tasks, every role; its report checked against numbers worked
out by hand from the stored records, its files parsed, a resume that plays nothing again,
the judge's failures and repairs counted; and the bootstrap interval's laws."""

import csv
import io
import json
import math
import statistics
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sotopia_are.llm import LLMConfig
from sotopia_are.record import EpisodeRecord, record_from_are_json
from sotopia_are.storage import EpisodeStore, connect, import_episodes
from sotopia_are.studies import (
    BenchmarkResult,
    ExportFormat,
    ImportKind,
    TaskSet,
    benchmark,
    benchmark_report,
    bootstrap_ci,
    export_text,
    import_file,
    load_results,
    read_task_set,
)
from sotopia_are.testing import LocalLLMServer, ReplyLike, play_rule

SUBSET = Path(__file__).parents[1] / "data" / "sotopia_subset"
MODELS = ["openai/model-a", "openai/model-b"]
PARTNER = "openai/partner"
JUDGE = "openai/judge"


@pytest.fixture
def store(storage_data_dir: str) -> Iterator[EpisodeStore]:
    with connect() as opened:
        for name, kind in [
            ("agent_profiles.jsonl", ImportKind.agents),
            ("environment_profiles.jsonl", ImportKind.environments),
        ]:
            import_file(opened, SUBSET / name, kind=kind)
        yield opened


def tasks() -> TaskSet:
    return read_task_set(SUBSET / "env_agent_combos.jsonl").sample(2, seed=1)


def run(store: EpisodeStore, server: LocalLLMServer, **kwargs: Any) -> BenchmarkResult:
    return benchmark(
        tasks(),
        MODELS,
        PARTNER,
        tag="bench",
        judge_model=JUDGE,
        store=store,
        max_turns=3,
        config=LLMConfig(api_base=server.url),
        workers=1,
        **kwargs,
    )


def is_judge(request: Mapping[str, Any]) -> bool:
    return "impartial expert judge" in str(request["messages"][0]["content"])


def records(store: EpisodeStore) -> list[EpisodeRecord]:
    return [store.load(pk) for pk in store.episode_ids(tag="bench")]


def agent_under_test(record: EpisodeRecord) -> str:
    index = int(record.scenario_id.rsplit(".tested", 1)[1])
    return record.spec.agent_names[index]


def test_every_model_plays_every_task_in_every_role_against_the_partner(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = play_rule
    result = run(store, llm_server)
    assert len(result.batch.plan.planned) == 2 * 2 * 2 and not result.batch.failed
    played = records(store)
    seen = set()
    for record in played:
        agent = agent_under_test(record)
        others = [name for name in record.spec.agent_names if name != agent]
        assert record.models[agent] in MODELS and {record.models[n] for n in others} == {PARTNER}
        seen.add((record.scenario_id, record.models[agent]))
    task_ids = [t.task_id for t in tasks().tasks]
    assert seen == {(f"{t}.tested{k}", m) for t in task_ids for k in (0, 1) for m in MODELS}


def test_the_report_is_what_the_stored_records_say(
    llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path
) -> None:
    llm_server.rule = play_rule
    report = run(store, llm_server).report
    assert report == benchmark_report(store, "bench")  # rebuilt from the store alone
    played = records(store)
    assert [(r.model, r.partner) for r in report.results] == [(m, PARTNER) for m in MODELS]
    for result in report.results:
        mine = [r for r in played if r.models[agent_under_test(r)] == result.model]
        assert result.episodes == result.rated == len(mine) == 4
        for dimension, stat in result.dimensions.items():
            values = [r.scores[agent_under_test(r)][dimension] for r in mine]
            assert stat.mean == pytest.approx(statistics.fmean(values)) and stat.n == 4
            assert stat.low <= stat.mean <= stat.high
        outcomes = []
        for r in mine:
            own = r.scores[agent_under_test(r)]["overall_score"]
            other = next(
                s["overall_score"] for n, s in r.scores.items() if n != agent_under_test(r)
            )
            outcomes.append("tie" if math.isclose(own, other) else "win" if own > other else "loss")
        assert (result.wins, result.ties, result.losses) == tuple(
            outcomes.count(o) for o in ("win", "tie", "loss")
        )
        assert result.wins + result.losses > 0  # the stand-in's judge tells agents apart
        assert result.prompt_tokens == sum(r.usage.prompt_tokens for r in mine) > 0
        assert result.completion_tokens == sum(r.usage.completion_tokens for r in mine)
        own = [
            c for r in mine for c in r.calls if c.scope == f"{r.episode_id}/{agent_under_test(r)}"
        ]
        assert result.model_tokens == sum(c.prompt_tokens + c.completion_tokens for c in own) > 0
        assert len(own) == sum(1 for r in mine for c in r.calls if c.model == result.model)
        assert result.judge_failures == result.judge_repaired == result.failed == 0
    assert report.matrix() == {
        r.model: {PARTNER: r.dimensions["overall_score"].mean} for r in report.results
    }

    written = report.write(tmp_path / "out")
    assert [p.name for p in written] == ["report.json", "results.csv", "episodes.csv"]
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["tag"] == "bench" and data["dimensions"][-1] == "overall_score"
    first = data["results"][0]
    assert first["dimensions"]["goal"]["mean"] == report.results[0].dimensions["goal"].mean
    lines = list(csv.DictReader(io.StringIO((tmp_path / "out" / "results.csv").read_text())))
    assert len(lines) == 2 * len(report.dimensions)
    goal = next(x for x in lines if x["model"] == MODELS[1] and x["dimension"] == "goal")
    assert float(goal["mean"]) == report.results[1].dimensions["goal"].mean
    assert int(goal["wins"]) == report.results[1].wins
    episodes = list(csv.DictReader(io.StringIO((tmp_path / "out" / "episodes.csv").read_text())))
    assert {e["episode_id"] for e in episodes} == {r.episode_id for r in played}

    frame = load_results(store, tag="bench")
    assert len(frame) == 8 and set(report.dimensions) <= set(frame.columns)
    means = frame.groupby("model")["goal"].mean()
    assert means[MODELS[0]] == pytest.approx(report.results[0].dimensions["goal"].mean)


def test_a_resumed_benchmark_plays_nothing_complete_again(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = play_rule
    first = run(store, llm_server)
    before = records(store)
    requests = len(llm_server.chat_requests)
    again = run(store, llm_server, resume=True)
    assert again.batch.plan.skipped == 8 and not again.batch.plan.pending
    assert len(llm_server.chat_requests) == requests and records(store) == before
    assert again.report == first.report


def fixed_on_second_try(request: Mapping[str, Any]) -> ReplyLike:
    """The judge's first answer is not JSON; asked again, it rates."""
    if is_judge(request) and len(request["messages"]) <= 2:
        return "I would rather not say."
    return play_rule(request)


def never_rates(request: Mapping[str, Any]) -> ReplyLike:
    return "I would rather not say." if is_judge(request) else play_rule(request)


def test_the_judges_repairs_and_failures_are_counted(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = fixed_on_second_try
    repaired = run(store, llm_server).report
    assert [r.judge_repaired for r in repaired.results] == [4, 4]
    assert all(r.rated == 4 and r.judge_failures == 0 for r in repaired.results)

    llm_server.rule = never_rates
    failed = benchmark(
        tasks(), MODELS[:1], PARTNER, tag="unrated", judge_model=JUDGE, store=store,
        max_turns=2, config=LLMConfig(api_base=llm_server.url), workers=1,
    )  # fmt: skip
    assert failed.batch.failed
    (result,) = failed.report.results
    assert (result.episodes, result.rated, result.unrated, result.judge_failures) == (4, 0, 4, 4)
    assert result.dimensions == {} and (result.wins, result.ties, result.losses) == (0, 0, 0)


def test_episodes_that_are_not_a_benchmarks_are_named(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = play_rule
    run(store, llm_server)
    stray = records(store)[0].model_copy(update={"episode_id": "stray", "scenario_id": "x"})
    store.save_record(stray)
    with pytest.raises(ValueError, match=r"episode stray .* is not a benchmark episode"):
        benchmark_report(store, "bench")


values = st.lists(st.integers(-10, 10).map(float), min_size=2, max_size=30)


@settings(max_examples=40, deadline=None)
@given(values, st.integers(0, 2**32))
def test_the_bootstrap_interval_holds_the_mean_and_narrows_with_more_episodes(
    sample: list[float], seed: int
) -> None:
    low, high = bootstrap_ci(sample, seed=seed)
    mean = statistics.fmean(sample)
    assert low - 1e-9 <= mean <= high + 1e-9
    assert bootstrap_ci(sample, seed=seed) == (low, high)  # seeded
    more_low, more_high = bootstrap_ci(sample * 4, seed=seed)
    if len(set(sample)) > 1:
        assert more_high - more_low < high - low
    else:
        assert more_low == more_high == low == high


def test_the_judges_words_travel_with_the_episode_in_both_exports(
    llm_server: LocalLLMServer, store: EpisodeStore, storage_data_dir: str
) -> None:
    llm_server.rule = play_rule
    run(store, llm_server)
    llm_server.rule = never_rates
    benchmark(
        tasks(), MODELS[:1], PARTNER, tag="unrated", judge_model=JUDGE, store=store,
        max_turns=2, config=LLMConfig(api_base=llm_server.url), workers=1,
    )  # fmt: skip
    report = benchmark_report(store, "bench")
    ids = store.episode_ids()
    jsonl = export_text(store, ids, ExportFormat.jsonl)
    traces = {pk: export_text(store, [pk], ExportFormat.are) for pk in ids}
    kept = {pk: store.load(pk).verdicts for pk in ids}
    store.client.flushdb()
    # JSONL: the whole record, so the report is rebuilt from it alone.
    import_episodes(store, jsonl.splitlines())
    assert benchmark_report(store, "bench") == report
    for pk, text in traces.items():
        verdicts = record_from_are_json(text).verdicts
        assert verdicts == kept[pk] and verdicts
        evaluation = verdicts[-1].evaluation
        if verdicts[-1].rated:
            assert all(d.reasonings for r in evaluation.ratings for d in r.dimensions.values())
        else:
            assert evaluation.failures and evaluation.failures[0].raw_outputs
