"""The CLI names the judge and rubric of every score it shows, chooses among verdicts
with --judge, says when nothing matched (exit 1 unless --allow-empty), and checks
imported episodes (refused naming the field; --lenient keeps them FLAGGED)."""

import asyncio
import json
from pathlib import Path

from cli_support import invoke

from sotopia_are.agents import ScriptedAgent
from sotopia_are.evaluation import AgentRating, DimensionScore, Evaluation
from sotopia_are.messages import AgentAction
from sotopia_are.record import EpisodeRecord, Verdict, record_of_result
from sotopia_are.social import EpisodeSpec, run_episode
from sotopia_are.storage import connect

NAMES = ["Zoë O'Brien", "Ada Brooks"]


def _played(episode_id: str) -> EpisodeRecord:
    spec = EpisodeSpec(
        episode_id=episode_id,
        scenario="Two neighbours share a garden.",
        agent_names=NAMES,
        agent_backgrounds=["", ""],
        agent_goals=["the sunny plot", "the shed"],
        max_turns=2,
    )
    hello = AgentAction(action_type="speak", argument="Hello there.")
    result = asyncio.run(run_episode(spec, [ScriptedAgent(n, [hello, hello]) for n in NAMES]))
    return record_of_result(result, tag="scores")


def _verdict(judge: str, goals: tuple[int, int], rubric: str = "goal_only") -> Verdict:
    ratings = [
        AgentRating.of(name, [DimensionScore.of("goal", 0, 10, [goal], ["why"])])
        for name, goal in zip(NAMES, goals, strict=True)
    ]
    evaluation = Evaluation(
        rubric=rubric, model=judge, agent_names=NAMES, samples=1, valid_samples=1, ratings=ratings
    )
    return Verdict(judge_model=judge, rubric=rubric, prompt="p@1", evaluation=evaluation)


def test_list_and_show_name_the_judge_and_choose_with_judge(redis_url: str) -> None:
    record = _played("two-judges")
    record = record.with_verdict(_verdict("openai/first", (8, 2)))
    record = record.with_verdict(_verdict("openai/second", (3, 6)))
    with connect() as store:
        store.save_record(record)
    listed = invoke("list")
    assert listed.exit_code == 0, listed.output
    assert "overall: Zoë 3.0, Ada 6.0 [+1 other verdict]" in listed.stdout
    assert "scores from judge openai/second, rubric goal_only" in listed.stdout
    assert "1 episodes have several verdicts" in listed.stdout
    assert "choose with --judge MODEL" in listed.stdout
    first = invoke("list", "--judge", "openai/first")
    assert first.exit_code == 0, first.output
    assert "overall: Zoë 8.0, Ada 2.0" in first.stdout
    assert "scores from judge openai/first, rubric goal_only" in first.stdout
    by_key = invoke("list", "--json", "--judge", record.verdicts[0].key)
    summary = json.loads(by_key.stdout)
    assert summary["overall"] == {"Zoë O'Brien": 8.0, "Ada Brooks": 2.0}
    assert (summary["judge"], summary["rubric"]) == ("openai/first", "goal_only")
    assert summary["judges"] == ["openai/first", "openai/second"]
    nobody = invoke("list", "--judge", "openai/nobody")
    assert "overall" not in nobody.stdout.splitlines()[1]
    assert "1 episodes have no rated verdict of judge openai/nobody" in nobody.stdout
    shown = invoke("show", "two-judges")
    assert shown.exit_code == 0, shown.output
    assert "judge: openai/first (rubric goal_only, p@1)\n" in shown.stdout
    assert "judge: openai/second (rubric goal_only, p@1) [the default scores" in shown.stdout
    assert "Scores from judge openai/first, rubric goal_only" in shown.stdout
    assert "Scores from judge openai/second, rubric goal_only" in shown.stdout


def test_episodes_rated_by_different_judges_name_theirs_on_each_line(redis_url: str) -> None:
    with connect() as store:
        store.save_record(_played("by-a").with_verdict(_verdict("openai/a", (5, 5))))
        store.save_record(_played("by-b").with_verdict(_verdict("openai/b", (4, 4), rubric="own")))
    listed = invoke("list")
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()[1:3]}
    assert "overall (judge openai/a, goal_only): Zoë 5.0" in lines["by-a"]
    assert "overall (judge openai/b, own): Zoë 4.0" in lines["by-b"]
    assert "scores from 2 judge/rubric pairs (named on each line)" in listed.stdout


def test_listing_and_exporting_nothing_is_an_error_unless_allowed(
    redis_url: str, tmp_path: Path
) -> None:
    empty = invoke("list")
    assert empty.exit_code == 1 and "error: no episodes in " in empty.stderr
    assert invoke("list", "--allow-empty").exit_code == 0
    out = tmp_path / "all.jsonl"
    refused = invoke("export", "--all", "-o", out)
    assert refused.exit_code == 1 and "nothing to export" in refused.stderr
    assert not out.exists()
    untagged = invoke("export", "--tag", "nope", "-o", out)
    assert untagged.exit_code == 1 and "no episodes tagged 'nope'" in untagged.stderr
    allowed = invoke("export", "--all", "-o", out, "--allow-empty")
    assert allowed.exit_code == 0, allowed.output
    assert out.read_text() == "" and "exported 0 episodes" in allowed.stdout


def test_import_refuses_a_forged_episode_and_lenient_keeps_it_flagged(
    redis_url: str, tmp_path: Path
) -> None:
    document = json.loads(_played("forged").with_verdict(_verdict("openai/j", (7, 3))).to_json())
    goal = document["verdicts"][0]["evaluation"]["ratings"][0]["dimensions"]["goal"]
    goal.update(scores=[11], mean=11.0, min=11, max=11)
    document["verdicts"][0]["evaluation"]["ratings"][0]["overall"] = 11.0
    path = tmp_path / "forged.jsonl"
    path.write_text(json.dumps(document) + "\n")
    refused = invoke("import", path)
    assert refused.exit_code == 1
    assert f"{path}:1: episode forged:" in refused.stderr
    assert "dimensions.goal.scores[0]: 11 is outside goal's range 0..10" in refused.stderr
    with connect() as store:
        assert store.episode_ids() == []
    kept = invoke("import", path, "--lenient")
    assert kept.exit_code == 0, kept.output
    assert "warning: episode forged kept FLAGGED: verdicts[0]" in kept.stderr
    listed = invoke("list")
    assert "FLAGGED (1 problems)" in listed.stdout
    assert "1 episodes are FLAGGED" in listed.stdout
    assert json.loads(invoke("list", "--json").stdout)["problems"] == [
        "verdicts[0].evaluation.ratings[0].dimensions.goal.scores[0]: 11 is outside goal's "
        "range 0..10"
    ]
    shown = invoke("show", "forged")
    assert "FLAGGED (imported despite): verdicts[0].evaluation" in shown.stdout


def test_an_are_file_of_a_complete_episode_without_events_is_refused(
    redis_url: str, tmp_path: Path
) -> None:
    trace = _played("hollow").trace().model_dump(mode="json")
    trace["completed_events"] = []
    path = tmp_path / "hollow.json"
    path.write_text(json.dumps(trace))
    refused = invoke("import", path)
    assert refused.exit_code == 1
    assert "episode hollow: status: complete, but the episode has no events" in refused.stderr
    assert invoke("import", path, "--lenient").exit_code == 0
    with connect() as store:
        assert store.load("hollow").problems == ("status: complete, but the episode has no events",)
