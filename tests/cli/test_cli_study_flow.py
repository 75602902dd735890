"""The first hour of a study from the command line: a batch with the judge's samples and
a turn limit, re-rating a tag with a second judge (both verdicts kept, resumable), every
verdict shown with its reasoning, a tag exported, a written script stored, turns shown
as they happen."""

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cli_support import BAKERY, MODEL, SCENARIOS, SCRIPTS, conversation_rule, invoke

from sotopia_are.evaluation import GOAL_ONLY
from sotopia_are.storage import connect
from sotopia_are.testing import LocalLLMServer, schema_rule

SECOND_JUDGE = "openai/second-judge"


def _batch(tmp_path: Path, llm_server: LocalLLMServer, *extra: str) -> Any:
    specs = tmp_path / "study.jsonl"
    specs.write_text((SCENARIOS / "bakery_negotiation.json").read_text("utf-8").replace("\n", " "))
    return invoke(
        "batch", specs, "--model", MODEL, "--api-base", llm_server.url, "--workers", "1",
        "--tag", "study", *extra,
    )  # fmt: skip


def test_batch_takes_samples_and_max_turns(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = conversation_rule(BAKERY)
    result = _batch(tmp_path, llm_server, "--repeat", "2", "--max-turns", "3", "--samples", "2")
    assert result.exit_code == 0, result.output
    with connect() as store:
        records = [store.load(i) for i in store.episode_ids(tag="study")]
    assert len(records) == 2
    for record in records:
        assert record.turns_played == 3 and record.spec.max_turns == 3
        assert record.verdict is not None and record.verdict.evaluation.samples == 2
        assert len(record.verdict.evaluation.calls) == 2


def test_evaluate_a_tag_with_a_second_judge_keeps_both_verdicts_and_resumes(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = conversation_rule(BAKERY)
    assert _batch(tmp_path, llm_server, "--repeat", "3", "--max-turns", "2").exit_code == 0
    judged_by: list[str] = []
    agent_rule = conversation_rule(BAKERY, GOAL_ONLY)

    def second_judge(body: Mapping[str, Any]) -> str:
        judged_by.append(body["model"])
        return agent_rule(body)

    llm_server.rule = second_judge
    args = ("evaluate", "--tag", "study", "--judge-model", SECOND_JUDGE, "--rubric",
            "goal_only", "--api-base", llm_server.url, "--concurrency", "2")  # fmt: skip
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    assert f"judge {SECOND_JUDGE} (goal_only): 3 rated, 0 skipped, 0 not rated, of 3" in (
        first.stdout
    )
    with connect() as store:
        records = [store.load(i) for i in store.episode_ids(tag="study")]
    for record in records:
        assert [(v.judge_model, v.rubric) for v in record.verdicts] == [
            (MODEL, "sotopia_eval"),
            (SECOND_JUDGE, "goal_only"),
        ]
    assert len(judged_by) == 3
    # Run again (as after an interruption): what this judge rated is skipped, not paid twice.
    again = invoke(*args)
    assert again.exit_code == 0, again.output
    assert "0 rated, 3 skipped" in again.stdout and len(judged_by) == 3
    shown = invoke("show", records[0].episode_id)
    assert shown.exit_code == 0, shown.output
    assert f"judge: {MODEL} (rubric sotopia_eval" in shown.stdout
    assert f"judge: {SECOND_JUDGE} (rubric goal_only" in shown.stdout
    assert "Scores from judge openai/second-judge, rubric goal_only" in shown.stdout
    # Every verdict's reasoning, agents in the episode's order.
    assert shown.stdout.index("Mara Quinn comments:") < shown.stdout.index("Teo Alvarez comments:")
    assert "goal: Mara Quinn on goal" in shown.stdout


def test_export_a_tag_and_list_as_json(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = conversation_rule(BAKERY)
    assert _batch(tmp_path, llm_server, "--repeat", "2", "--max-turns", "2").exit_code == 0
    other = invoke("demo", "-o", tmp_path / "demo.json", env={"SOTOPIA_ARE_MODEL": ""})
    assert other.exit_code == 0, other.output
    exported = invoke("export", "--tag", "study", "-o", tmp_path / "study.jsonl")
    assert exported.exit_code == 0, exported.output
    lines = (tmp_path / "study.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == 2 and all(json.loads(line)["tag"] == "study" for line in lines)
    listed = invoke("list", "--tag", "study", "--json")
    summaries = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [s["agents"] for s in summaries] == [BAKERY, BAKERY]
    assert all(s["verdict_count"] == 1 and set(s["overall"]) == set(BAKERY) for s in summaries)
    missing = invoke("export", "--tag", "nope")
    assert missing.exit_code == 1 and "no episodes tagged 'nope' in " in missing.stderr
    assert missing.stderr.endswith("; see 'sotopia-are list'\n")


def test_a_rated_script_is_stored_and_an_unrated_one_imported(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    garden = ["Ines Okafor", "Benedikt Müller-Roth", "Jo Ng"]
    llm_server.rule = conversation_rule(garden)
    script = SCRIPTS / "garden_committee.txt"
    context = SCENARIOS / "garden_committee.json"
    rated = invoke("evaluate", "--script", script, "--spec", context, "--store", "--model",
                   MODEL, "--api-base", llm_server.url)  # fmt: skip
    assert rated.exit_code == 0, rated.output
    assert "stored as garden_committee in" in rated.stdout
    imported = invoke("import", "--script", script, "--spec", context)
    assert imported.exit_code == 1 and "--replace" in imported.stderr
    with connect() as store:
        record = store.load("garden_committee")
    assert record.tag == "script" and record.verdict is not None and record.verdict.rated
    # The private line stays private in the stored episode.
    assert "private" in record.transcript()
    assert all("[private" not in line for line in record.views.agents["Benedikt Müller-Roth"]
               .transcript().splitlines())  # fmt: skip
    replaced = invoke("import", "--script", script, "--spec", context, "--replace")
    assert replaced.exit_code == 0, replaced.output
    with connect() as store:
        assert store.load("garden_committee").verdicts == ()


def test_run_shows_turns_as_they_happen_unless_quiet(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = conversation_rule(BAKERY)
    args = ("run", SCENARIOS / "bakery_negotiation.json", "--model", MODEL, "--api-base",
            llm_server.url, "--max-turns", "2", "--no-evaluate")  # fmt: skip
    live = invoke(*args)
    assert live.exit_code == 0, live.output
    assert re.search(r"^turn 0: Mara Quinn said: \"Let us meet halfway.\"$", live.stdout, re.M)
    assert "== " not in live.stdout  # shown live, not printed again at the end
    quiet = invoke(*args, "--quiet")
    assert quiet.exit_code == 0, quiet.output
    assert "turn 0:" not in quiet.stdout and "the full transcript" in quiet.stdout


def test_a_screenplay_with_a_whisper_is_rated_and_stored_with_the_whisper_private(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = schema_rule
    script = SCRIPTS / "late_shift_screenplay.txt"
    rated = invoke("evaluate", "--script", script, "--spec",
                   SCENARIOS / "late_shift_screenplay.json", "--store", "--model", MODEL,
                   "--api-base", llm_server.url)  # fmt: skip
    assert rated.exit_code == 0, rated.output
    assert "Dana Reyes [private to ['Lucia Moreno']] said: \"He was at the casino.\"" in (
        rated.stdout
    )
    judge_prompt = llm_server.chat_requests[-1].body["messages"]
    assert "He was at the casino." in json.dumps(judge_prompt)  # the judge sees everything
    with connect() as store:
        record = store.load("late_shift_screenplay")
    assert record.verdict is not None and record.verdict.rated
    assert "casino" not in record.views.agents["Marcus Webb"].transcript()
    assert "casino" in record.views.agents["Lucia Moreno"].transcript()
    shown = invoke("show", "late_shift_screenplay", "--as", "Marcus Webb")
    assert shown.exit_code == 0 and "casino" not in shown.stdout
