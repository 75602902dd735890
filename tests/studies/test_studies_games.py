"""Games through the verbs, against the local server playing the offline stand-in
(``play_rule``): ``sa.run``/``sa.arun`` play a game by its rules and give it its outcome
verdict beside the LLM judge's; ``arate`` and ``rate_stored`` take the rules judge as any
judge; a batch of games finishes with outcome verdicts and resumes after an interruption
(an unrated game is rated by the batch's judge although its outcome verdict is there);
a benchmark of the bargaining game reports win rates and payoffs per model and role."""

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import sotopia_are as sa
from sotopia_are.games import GameJudge, outcome_of
from sotopia_are.llm import RetryPolicy
from sotopia_are.record import VerdictExistsError
from sotopia_are.storage import EpisodeRecorder, EpisodeStore
from sotopia_are.studies import StudyInputError, benchmark, plan_batch
from sotopia_are.testing import LocalLLMServer, Reply, ReplyLike, play_rule

GAMES = Path(__file__).parents[2] / "examples" / "games"
MODEL = "openai/stand-in"
OUTCOME = "rules | game-outcome | outcome@1"


def game(name: str, **changes: Any) -> sa.GameSpec:
    spec = sa.GameSpec.model_validate_json((GAMES / f"{name}.json").read_text())
    return spec.replace(**changes) if changes else spec


def is_judge(body: Mapping[str, Any]) -> bool:
    return "impartial expert judge" in body["messages"][0]["content"]


@pytest.fixture
def config(llm_server: LocalLLMServer) -> sa.LLMConfig:
    llm_server.rule = play_rule
    fast = RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.02)
    return sa.LLMConfig(api_base=llm_server.url, timeout_s=5.0, retry=fast)


def test_run_plays_a_game_by_its_rules_with_its_outcome_verdict_beside_the_judges(
    llm_server: LocalLLMServer, config: sa.LLMConfig, store: EpisodeStore
) -> None:
    spec = game("werewolf", seed=5)
    judge = sa.LLMJudge(MODEL, config=config)
    record = sa.run(spec, models=MODEL, judge=judge, store=store, config=config)
    assert record.status is sa.EpisodeStatus.COMPLETE, record.reason
    assert record.reason.startswith(("game over", "cycle limit"))
    assert [v.key for v in record.verdicts] == [OUTCOME, sa.Verdict.key_for(judge)]
    assert all(v.rated for v in record.verdicts) and not record.failed_or_unrated
    outcome = outcome_of(record.spec, record.entries)
    rules = record.verdict_of("rules")
    assert rules is not None
    assert {a: s["won"] for a, s in rules.scores.items()} == {
        row.name: float(row.won) for row in outcome.players
    }
    # Only legal moves were played (the game ended by its rules), through the model.
    assert any(e.move is not None for e in record.entries)
    assert store.load(record.episode_id) == record
    # SOTOPIA-Eval read the game's transcript with each agent's goal.
    (request,) = [r for r in llm_server.chat_requests if is_judge(r.body)]
    prompt = json.dumps(request.body["messages"])
    assert all(json.dumps(goal)[1:-1] in prompt for goal in spec.agent_goals)
    # The default scores are the latest rated verdict's: the judge's.
    assert record.scores.rubric == "sotopia_eval"


def test_without_a_judge_a_game_still_gets_its_free_outcome_verdict_and_rates_alike_again(
    config: sa.LLMConfig, store: EpisodeStore
) -> None:
    record = sa.run(game("bargaining", seed=2), models=MODEL, store=store, config=config)
    assert [v.key for v in record.verdicts] == [OUTCOME]
    assert record.scores.judge_model == "rules" and not record.failed_or_unrated
    with pytest.raises(VerdictExistsError):
        sa.rate(record, GameJudge())
    again = sa.rate(record, GameJudge(), replace=True, store=store)
    assert again == record == store.load(record.episode_id)
    # rate_stored takes the rules judge as any judge, and skips what it rated.
    (outcome,) = sa.rate_stored(store, [record.episode_id], GameJudge())
    assert outcome.skipped == "this judge rated it already" and outcome.judge == "rules"


def test_arun_plays_a_game_inside_a_running_loop(config: sa.LLMConfig) -> None:
    async def main() -> sa.EpisodeRecord:
        return await sa.arun(game("werewolf_witch", seed=1), models=MODEL, config=config)

    record = asyncio.run(main())
    assert record.status is sa.EpisodeStatus.COMPLETE
    assert record.verdict is not None and record.verdict.key == OUTCOME


def test_rate_stored_rates_stored_games_with_an_llm_judge(
    config: sa.LLMConfig, store: EpisodeStore
) -> None:
    ids = [
        sa.run(game("werewolf", seed=s), models=MODEL, store=store, config=config).episode_id
        for s in (1, 2)
    ]
    judge = sa.LLMJudge(MODEL, rubric=sa.GOAL_ONLY, config=config)
    outcomes = sa.rate_stored(store, ids, judge)
    assert [o.rated for o in outcomes] == [True, True]
    for episode_id in ids:
        keys = [v.key for v in store.load(episode_id).verdicts]
        assert keys == [OUTCOME, sa.Verdict.key_for(judge)]


def stale_start(store: EpisodeStore, spec: sa.EpisodeSpec, tag: str) -> str:
    """Store the batch's first episode of ``spec`` as a run that died long ago left it:
    ``running``, with no event since."""
    item = plan_batch([spec], dict.fromkeys(spec.agent_names, MODEL), tag=tag)[0]
    then = EpisodeStore(store.client, location=store.location, clock=lambda: time.time() - 3600)
    EpisodeRecorder(then, tag=tag, models=item.models).start(item.spec)
    return item.spec.episode_id


def test_a_batch_of_games_finishes_with_outcome_verdicts_and_resumes_after_an_interruption(
    llm_server: LocalLLMServer, config: sa.LLMConfig, store: EpisodeStore
) -> None:
    spec = game("werewolf")
    left = stale_start(store, spec, "g")
    # The judge cannot rate at first: its verdicts fail, the outcome verdicts do not.
    too_long = Reply.error(400, "maximum context length is 8192 tokens (context_length_exceeded)")

    def rule(body: Mapping[str, Any]) -> ReplyLike:
        return too_long if is_judge(body) else play_rule(body)

    llm_server.rule = rule
    first = sa.batch(
        [spec], MODEL, tag="g", repeat=3, store=store, judge_model=MODEL, config=config,
        workers=1, resume=True, stale_after=60,
    )  # fmt: skip
    # The episode the dead run left was played again with the others.
    assert first.plan.to_play == 3 and left in {o.episode_id for o in first.outcomes}
    assert all(o.status is sa.EpisodeStatus.COMPLETE and o.unrated for o in first.outcomes)
    ids = sorted(o.episode_id for o in first.outcomes)
    for episode_id in ids:
        record = store.load(episode_id)
        assert record.verdict_of("rules") is not None and record.verdict_of(MODEL) is None

    llm_server.rule = play_rule
    sent = len(llm_server.chat_requests)
    resumed = sa.batch(
        [spec], MODEL, tag="g", repeat=3, store=store, judge_model=MODEL, config=config,
        workers=1, resume=True,
    )  # fmt: skip
    assert (resumed.plan.rate_only, resumed.plan.to_play) == (3, 0)
    assert not resumed.failed
    # Only the judge ran: the games were not played again.
    assert all(is_judge(r.body) for r in llm_server.chat_requests[sent:])
    for episode_id in ids:
        record = store.load(episode_id)
        assert record.verdicts[0].key == OUTCOME
        assert record.verdict_of(MODEL) is not None

    without_judge = sa.batch(
        [spec], MODEL, tag="g2", repeat=2, store=store, config=config, workers=1
    )
    assert not without_judge.failed
    assert all(store.load(o.episode_id).verdict_of("rules") for o in without_judge.outcomes)


def test_a_benchmark_of_bargaining_reports_win_rates_and_payoffs_per_model_and_role(
    config: sa.LLMConfig, store: EpisodeStore
) -> None:
    result = benchmark(
        [game("bargaining")], ["openai/a", "openai/b"], MODEL, tag="bench", store=store,
        seeds=3, config=config, workers=1,
    )  # fmt: skip
    assert not result.batch.failed
    report = result.report
    rows = {(r.model, r.role): r for r in report.games}
    roles = ["", "buyer", "seller"]
    assert sorted(rows) == [(m, role) for m in ("openai/a", "openai/b") for role in roles]
    for (_, role), row in rows.items():
        assert row.games == (6 if role == "" else 3)
        for stat in (row.win_rate, row.payoff):
            assert stat.low <= stat.mean <= stat.high and stat.n == row.games
        assert row.wins == round(row.win_rate.mean * row.games)
    for episode in report.rows:
        assert episode.role in ("buyer", "seller")
        assert episode.won in (0.0, 1.0) and episode.payoff is not None
    header, table = report.game_table()
    assert header[-2:] == ["win rate", "mean payoff"] and len(table) == 6
    assert json.loads(report.to_json())["games"][0]["role"] == ""
    # Conversations still need a judge.
    talk = sa.EpisodeSpec(
        scenario="A chat.", agent_names=["A B", "C D"], agent_backgrounds=["", ""],
        agent_goals=["", ""],
    )  # fmt: skip
    with pytest.raises(StudyInputError, match="needs a judge"):
        benchmark([talk], ["openai/a"], MODEL, tag="talk", store=store, config=config)


def test_a_batchs_driver_loads_the_games_modules_before_its_workers_fork_for_games_only() -> None:
    """A conversation's batch never loads the games' modules; a batch of games loads them
    before its workers fork, so that they share one load rather than each loading them."""
    code = (
        "import sys, types\n"
        "from sotopia_are.studies.workers import _load_before_fork\n"
        "def jobs(game):\n"
        "    spec = types.SimpleNamespace(game=game)\n"
        "    return [types.SimpleNamespace(episodes=[types.SimpleNamespace(spec=spec)])]\n"
        "_load_before_fork(jobs(None))\n"
        "print('sotopia_are.games' in sys.modules)\n"
        "_load_before_fork(jobs(object()))\n"
        "print('sotopia_are.games' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["False", "True"]
