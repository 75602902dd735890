"""`sotopia-are agreement` and `evaluate` with a panel of judges: import the human-rated
transcripts, rate them with two judges (the stand-in server), compare with the humans."""

import csv
import io
import json
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cli_support import EXAMPLES, MODEL, invoke

from sotopia_are.evaluation import SOTOPIA_EVAL, LLMJudge
from sotopia_are.llm import LLMConfig, LLMSession
from sotopia_are.storage import connect
from sotopia_are.studies import rate_script, script_context, stored_agreement
from sotopia_are.testing import LocalLLMServer

DATA = Path(__file__).parents[1] / "data"
LABELS = sorted((DATA / "sotopia_human").glob("he_*.json"))
TRANSCRIPTS = DATA / "transcripts"
# Participants all differ, so the stand-in judge knows which episode it rates.
EPISODES = {
    "he_01HNBEX1CAAMK0YQ7M1ZZ6BHS4": ("Samuel Anderson", "Noah Davis"),
    "he_01HMNB9CHFWDPMMTSK611QVAFC": ("Finnegan O'Malley", "Gwen Pierce"),
    "he_01HNBAXJ1HS3NVDHEX69DY72HF": ("William Brown", "Ava Martinez"),
    "he_01HMX2QGK0R400PTY9YH7F50F3": ("Naomi Fletcher", "Lena Goodwin"),
}
# Each judge's goal score per agent (every other dimension: the middle of its range).
GOALS = {
    "judge-a": [7, 3, 1, 2, 9, 8, 4, 6],
    "judge-b": [2, 4, 0, 3, 10, 5, 7, 8],
}
AGENTS = [agent for pair in EPISODES.values() for agent in pair]


def stand_in_judge(body: Mapping[str, Any]) -> str:
    prompt = "\n".join(m["content"] for m in body["messages"])
    goals = dict(zip(AGENTS, GOALS[body["model"]], strict=True))
    (names,) = [pair for pair in EPISODES.values() if all(name in prompt for name in pair)]
    return json.dumps(
        {
            name: {
                d.name: {
                    "reasoning": "…",
                    "score": goals[name] if d.name == "goal" else (d.low + d.high) // 2,
                }
                for d in SOTOPIA_EVAL.dimensions
            }
            for name in names
        }
    )


def human_goal(stem: str) -> list[float]:
    """The annotators' mean goal score of agent 1 and agent 2, from the raw file."""
    document = json.loads((DATA / "sotopia_human" / f"{stem}.json").read_text(encoding="utf-8"))
    rows = document["human_annotations"]
    return [statistics.fmean(row[f"goal_{slot}"] for row in rows) for slot in (1, 2)]


def judges(server: LocalLLMServer) -> list[str]:
    return [
        "--judge-model", "openai/judge-a", "--judge-model", "openai/judge-b",
        "--api-base", server.url,
    ]  # fmt: skip


def import_and_rate(server: LocalLLMServer) -> None:
    server.rule = stand_in_judge
    for stem in EPISODES:
        imported = invoke("import", "--kind", "script", TRANSCRIPTS / f"{stem}.txt")
        assert imported.exit_code == 0, imported.output
    rated = invoke("evaluate", "--tag", "script", *judges(server))
    assert rated.exit_code == 0, rated.output
    assert "rated: he_01HNBEX1CAAMK0YQ7M1ZZ6BHS4 by openai/judge-b" in rated.stdout
    assert "judge openai/judge-a (sotopia_eval): 4 rated, 0 skipped, 0 not rated, of 4" in (
        rated.stdout
    )


def test_agreement_of_a_panel_with_the_humans(redis_url: str, llm_server: LocalLLMServer) -> None:
    import_and_rate(llm_server)
    result = invoke("agreement", *LABELS, "--tag", "script", "--format", "json", "--seed", "5")
    assert result.exit_code == 0, result.output
    reports = json.loads(result.stdout)
    assert [r["judge"].split(" | ")[0] for r in reports] == [
        "openai/judge-a",
        "openai/judge-b",
        "panel of 2 judges",
    ]
    humans = [score for stem in EPISODES for score in human_goal(stem)]
    panel = [(a + b) / 2 for a, b in zip(GOALS["judge-a"], GOALS["judge-b"], strict=True)]
    for report, judged in zip(reports, [GOALS["judge-a"], GOALS["judge-b"], panel], strict=True):
        assert sorted(report["episodes"]) == sorted(EPISODES)
        assert len(report["unrated"]) == 2  # labelled, never imported
        by_dimension = {d["dimension"]: d for d in report["dimensions"]}
        assert list(by_dimension) == SOTOPIA_EVAL.dimension_names
        goal = by_dimension["goal"]
        assert goal["n"] == 8
        assert goal["pearson"] == statistics.correlation(judged, humans)
        low, high = goal["spearman_ci"]
        assert low <= goal["spearman"] <= high
        # Every agent got the same believability from the judge: undefined, said so.
        assert by_dimension["believability"]["pearson"] is None
        assert by_dimension["believability"]["pearson_ci"] is None
    # One judge only, by its model.
    only = invoke("agreement", *LABELS, "--judge-model", "openai/judge-b", "--format", "json")
    assert [r["judge"] for r in json.loads(only.stdout)] == [reports[1]["judge"]]
    # The same numbers as a table and as CSV.
    table = invoke("agreement", *LABELS, "--tag", "script", "--seed", "5")
    assert table.exit_code == 0, table.output
    assert "judge panel of 2 judges: 4 episodes compared, 2 labelled but not rated" in table.stdout
    assert f"{reports[2]['dimensions'][-1]['pearson']:+.2f}" in table.stdout
    assert "undefined: fewer than 2 pairs, or one side gave every pair the same score" in (
        table.stdout
    )
    rows = list(csv.DictReader(io.StringIO(invoke("agreement", *LABELS, "--format", "csv").stdout)))
    assert len(rows) == 3 * 7
    goal_row = next(
        r for r in rows if r["judge"].startswith("openai/judge-a") and r["dimension"] == "goal"
    )
    assert float(goal_row["pearson"]) == reports[0]["dimensions"][-1]["pearson"]
    assert next(r for r in rows if r["dimension"] == "secret")["pearson"] == ""


def test_one_episode_rated_by_two_judges_shows_their_mean_and_spread(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    import_and_rate(llm_server)
    again = invoke("evaluate", "he_01HNBEX1CAAMK0YQ7M1ZZ6BHS4", *judges(llm_server))
    assert again.exit_code == 1
    assert again.stderr == (
        "error: episode he_01HNBEX1CAAMK0YQ7M1ZZ6BHS4 already has a verdict of each of the 2 "
        "judges; add another judge, or pass --replace to rate again\n"
    )
    third = invoke(
        "evaluate", "he_01HNBEX1CAAMK0YQ7M1ZZ6BHS4", *judges(llm_server), "--replace",
        "--samples", "2",
    )  # fmt: skip
    assert third.exit_code == 0, third.output
    assert "Panel of 2 judges: mean ± sd (judges)" in third.stdout
    # Samuel Anderson: goal 7 and 2.
    assert "4.50 ± 2.50 (2)" in third.stdout
    assert "stored the verdict with he_01HNBEX1CAAMK0YQ7M1ZZ6BHS4 (2 verdicts in all)" in (
        third.stdout
    )
    # K samples from each judge, kept in its own verdict.
    with connect(redis_url) as store:
        verdicts = store.load("he_01HNBEX1CAAMK0YQ7M1ZZ6BHS4").verdicts
    goals = [v.evaluation.rating("Samuel Anderson").dimensions["goal"].scores for v in verdicts]
    assert goals == [[7, 7], [2, 2]]


def test_a_one_judge_command_refuses_two_judges(redis_url: str) -> None:
    result = invoke(
        "run", EXAMPLES / "scenarios" / "bakery_negotiation.json", "--model", MODEL,
        "--judge-model", "openai/a", "--judge-model", "openai/b",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "error: this command rates with one judge, got --judge-model openai/a openai/b" in (
        result.stderr
    )


def test_no_shared_episodes_or_a_malformed_file_is_one_error_line(
    redis_url: str, tmp_path: Path
) -> None:
    result = invoke("agreement", *LABELS)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: the labelled set (6 episodes, e.g. ")
    assert "share no episodes" in result.stderr
    broken = tmp_path / "ratings.json"
    broken.write_text('{"agent_1_name": "A", "agent_2_name": "B", "human_annotations": []}')
    result = invoke("agreement", broken)
    assert result.exit_code == 1
    assert result.stderr == f"error: {broken}: human_annotations must be a non-empty list\n"
    result = invoke("agreement", tmp_path / "missing.csv")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {tmp_path / 'missing.csv'}: cannot read it")
    assert "Traceback" not in result.output


def test_a_script_rated_by_two_judges_keeps_both_verdicts(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = stand_in_judge
    script = TRANSCRIPTS / "he_01HMNB9CHFWDPMMTSK611QVAFC.txt"
    result = invoke("evaluate", "--script", script, "--store", *judges(llm_server))
    assert result.exit_code == 0, result.output
    # Finnegan O'Malley: goal 1 and 0.
    assert "0.50 ± 0.50 (2)" in result.stdout
    shown = invoke("show", "he_01HMNB9CHFWDPMMTSK611QVAFC")
    assert shown.exit_code == 0, shown.output
    assert "judge: openai/judge-a" in shown.stdout
    assert "judge: openai/judge-b" in shown.stdout


def test_agreement_of_a_real_small_judge_from_its_recorded_answers(redis_url: str) -> None:
    # Qwen2.5-Coder-1.5B rated five of the labelled transcripts once (tests/data/
    # sotopia_human/README.md); its answers are replayed, the verdicts stored, and
    # `agreement` reads them.
    session = LLMSession.replaying(
        DATA / "sotopia_human" / "judge-qwen15.jsonl",
        LLMConfig(api_base="http://127.0.0.1:1/v1"),
    )
    judge = LLMJudge("openai/qwen15", SOTOPIA_EVAL, session=session)
    with connect(redis_url) as store:
        for label in LABELS:
            if label.stem == "he_01HMN77RC0XRQS1A90B9DX75A8":
                continue  # not in the recording: the judge looped on it
            text = (TRANSCRIPTS / f"{label.stem}.txt").read_text(encoding="utf-8")
            spec = script_context(text, episode_id=label.stem)
            rate_script(text, judge, spec, episode_id=label.stem, store=store, tag="labelled")
        expected = stored_agreement(store, LABELS, tag="labelled")
    result = invoke("agreement", *LABELS, "--tag", "labelled", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [report.to_dict() for report in expected]
    (report,) = json.loads(result.stdout)
    assert report["judge"].startswith("openai/qwen15 | sotopia_eval | ")
    assert [d["n"] for d in report["dimensions"]] == [10] * 7
    table = invoke("agreement", *LABELS, "--tag", "labelled")
    assert "judge openai/qwen15 | sotopia_eval" in table.stdout
    assert "5 episodes compared, 1 labelled but not rated by it" in table.stdout
