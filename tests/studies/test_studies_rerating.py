"""`rate_stored`: a second judge over many stored episodes, resumable; `stored_batch` and
`BatchProgress`: the numbers a study reads while and after a batch runs."""

import json
from collections.abc import Mapping
from typing import Any

import pytest

import sotopia_are as sa
from sotopia_are.llm import InFlight, PermanentLLMError
from sotopia_are.storage import EpisodeStore
from sotopia_are.studies import BatchProgress, rate_stored, stored_batch
from sotopia_are.testing import LocalLLMServer, schema_rule

MODEL = "openai/test-model"
SECOND = "openai/second-judge"
NAMES = ["Mara Quinn", "Teo Alvarez"]


def spec(episode_id: str) -> sa.EpisodeSpec:
    return sa.EpisodeSpec(
        episode_id=episode_id,
        scenario="A bakery before closing.",
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=2,
    )


def _played(store: EpisodeStore, server: LocalLLMServer, count: int) -> list[str]:
    config = sa.LLMConfig(api_base=server.url)
    first_judge = sa.LLMJudge(MODEL, sa.GOAL_ONLY, config=config)
    ids = [f"ep-{n}" for n in range(count)]
    for episode_id in ids:
        sa.run(
            spec(episode_id), models=MODEL, config=config, judge=first_judge, store=store, tag="t"
        )
    return ids


def _interrupt(store: EpisodeStore, episode_id: str) -> None:
    """Store ``episode_id`` again as an episode interrupted before its end."""
    stopped = store.load(episode_id).model_copy(
        update={"status": sa.EpisodeStatus.INCOMPLETE, "reason": "interrupted", "verdicts": ()}
    )
    store.save_record(stopped, replace=True)


def test_a_second_judge_adds_its_verdicts_and_a_rerun_skips_what_it_rated(
    store: EpisodeStore, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = schema_rule
    ids = _played(store, llm_server, 3)
    _interrupt(store, "ep-2")  # an episode left unfinished is not rated
    judged: list[str] = []

    def second(body: Mapping[str, Any]) -> str:
        judged.append(body["model"])
        return schema_rule(body)

    llm_server.rule = second
    second_judge = sa.LLMJudge(SECOND, sa.GOAL_ONLY, config=sa.LLMConfig(api_base=llm_server.url))
    seen: list[str] = []
    outcomes = rate_stored(
        store, ids, second_judge, concurrency=2, on_outcome=lambda o: seen.append(o.episode_id)
    )
    assert [(o.episode_id, o.rated, o.skipped) for o in outcomes] == [
        ("ep-0", True, ""),
        ("ep-1", True, ""),
        ("ep-2", False, "it is incomplete"),
    ]
    assert sorted(seen) == ids and judged == ["second-judge"] * 2  # the server sees no prefix
    for episode_id in ("ep-0", "ep-1"):
        verdicts = store.load(episode_id).verdicts
        assert [v.judge_model for v in verdicts] == [MODEL, SECOND]
    again = rate_stored(store, ids, second_judge)
    assert [o.skipped for o in again][:2] == ["this judge rated it already"] * 2
    assert len(judged) == 2  # nothing paid twice


def test_a_verdict_whose_samples_all_failed_is_tried_again(
    store: EpisodeStore, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = schema_rule
    (episode_id,) = _played(store, llm_server, 1)
    second_judge = sa.LLMJudge(SECOND, sa.GOAL_ONLY, config=sa.LLMConfig(api_base=llm_server.url))
    llm_server.rule = lambda body: "not json at all"
    (failed,) = rate_stored(store, [episode_id], second_judge)
    assert (failed.rated, failed.skipped, failed.error) == (False, "", "")
    assert not store.load(episode_id).verdicts[-1].rated
    llm_server.rule = schema_rule
    (retried,) = rate_stored(store, [episode_id], second_judge)
    assert retried.rated
    verdicts = store.load(episode_id).verdicts
    assert [(v.judge_model, v.rated) for v in verdicts] == [(MODEL, True), (SECOND, True)]


def test_a_missing_episode_is_its_own_outcome_and_a_bad_key_stops_all(
    store: EpisodeStore, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = schema_rule
    (episode_id,) = _played(store, llm_server, 1)
    judge = sa.LLMJudge(SECOND, sa.GOAL_ONLY, config=sa.LLMConfig(api_base=llm_server.url))
    missing, rated = rate_stored(store, ["nope", episode_id], judge)
    assert "no episode 'nope'" in missing.error and rated.rated
    # A hosted model without its key would fail every episode alike: raised, not N errors.
    keyless = sa.LLMJudge("gpt-4o-mini", sa.GOAL_ONLY, config=sa.LLMConfig(api_key=None))
    with pytest.raises(PermanentLLMError, match="OPENAI_API_KEY"):
        rate_stored(store, [episode_id], keyless, replace=True)


def test_stored_batch_counts_what_the_store_holds(
    store: EpisodeStore, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = schema_rule
    _played(store, llm_server, 3)
    _interrupt(store, "ep-2")
    held = stored_batch(store, "t")
    assert held.rated == 2
    assert held.describe() == "2 complete (2 rated), 1 incomplete"
    assert stored_batch(store, "other").describe() == "none"


def test_batch_progress_reads_as_one_line() -> None:
    start = BatchProgress(total=50)
    assert start.describe() == "0/50 done, 0 failed, 0 running; 0.0 calls/s"
    now = BatchProgress(
        total=50, started=16, done=10, failed=2, in_flight=InFlight(5, 3.0), calls=120,
        elapsed_s=60.0,
    )  # fmt: skip
    assert (now.running, now.finished, now.calls_per_s) == (4, 12, 2.0)
    assert now.eta_s == pytest.approx(190.0)
    assert now.describe() == (
        "10/50 done, 2 failed, 4 running; 5 calls in flight, oldest 3 s, 2.0 calls/s, ETA 3 min"
    )
    assert json.dumps(now.describe())  # plain text: fit for a log line


def test_a_resume_with_other_agent_sampling_is_refused(
    store: EpisodeStore, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = schema_rule
    config = sa.LLMConfig(api_base=llm_server.url)
    warm = sa.Sampling(temperature=0.9, seed=1)
    args: dict[str, Any] = {"tag": "s", "store": store, "config": config, "workers": 1}
    first = sa.batch([spec("s")], MODEL, agent_sampling=warm, **args)
    assert not first.failed
    with pytest.raises(sa.studies.BatchError, match=r"played with agent sampling temperature=0\.9"):
        sa.batch([spec("s")], MODEL, agent_sampling=sa.Sampling(), resume=True, **args)
    again = sa.batch([spec("s")], MODEL, agent_sampling=warm, resume=True, **args)
    assert again.plan.skipped == 1 and not again.outcomes
