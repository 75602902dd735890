"""`sotopia-are batch`: resume skips complete episodes; worker processes share the store."""

import json
import re
from pathlib import Path

from cli_support import BAKERY, MODEL, SCENARIOS, invoke

from sotopia_are.storage import connect
from sotopia_are.testing import LocalLLMServer

LEAVE = json.dumps({"action_type": "leave", "argument": ""})


def specs_file(tmp_path: Path) -> Path:
    spec = json.loads((SCENARIOS / "bakery_negotiation.json").read_text())
    lines = [json.dumps({**spec, "episode_id": f"b{n}", "max_turns": 2}) for n in range(2)]
    path = tmp_path / "bakery.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_batch_resume_skips_complete_episodes(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = lambda body: LEAVE
    args = ("batch", specs_file(tmp_path), "--repeat", "2", "--model", MODEL,
            "--api-base", llm_server.url, "--no-evaluate", "--workers", "1")  # fmt: skip
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    assert re.search(r"finished complete\s+4\n", first.stdout) and "4 model calls" in first.stdout
    # Not a terminal (a job log): plain progress lines, the last one with everything done.
    assert "batch bakery: 4/4 done, 0 failed, 0 running" in first.stdout
    with connect() as store:
        assert len(store.completed_episode_ids("bakery")) == 4
    again = invoke(*args)
    assert again.exit_code == 1 and "already has 4 of these episodes" in again.stderr
    assert "--resume" in again.stderr
    resumed = invoke(*args, "--resume", "--repeat", "3")
    assert resumed.exit_code == 0, resumed.output
    assert "already complete 4, to rate only 0, to play 2" in resumed.stdout
    assert re.search(r"already complete \(skipped\)\s+4\n", resumed.stdout)
    assert "2 model calls" in resumed.stdout and len(llm_server.chat_requests) == 6


def test_cli_batch_two_workers(redis_url: str, llm_server: LocalLLMServer, tmp_path: Path) -> None:
    llm_server.rule = lambda body: LEAVE
    result = invoke(
        "batch", specs_file(tmp_path), "--repeat", "2", "--model", MODEL,
        "--api-base", llm_server.url, "--no-evaluate", "--workers", "2", "--tag", "w2",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert re.search(r"worker processes\s+2\n", result.stdout)
    with connect() as store:
        episodes = store.list_episodes(tag="w2", status="complete")
    assert len(episodes) == 4 and all(e.agents == BAKERY for e in episodes)


def test_cli_batch_an_example_file_twice_needs_resume_and_resume_finds_it(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = lambda body: LEAVE
    common = ("--model", MODEL, "--api-base", llm_server.url, "--no-evaluate", "--workers", "1")
    args = ("batch", SCENARIOS / "bakery_negotiation.json", "-n", "2", "--tag", "ex", *common)
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    with connect() as store:
        episodes = store.list_episodes(tag="ex")
    assert len(episodes) == 2 and {e.scenario_id for e in episodes} == {"bakery-negotiation"}
    again = invoke(*args)
    assert again.exit_code == 1 and "already has 2 of these episodes" in again.stderr
    assert "--resume" in again.stderr
    resumed = invoke(*args, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert "already complete 2, to rate only 0, to play 0" in resumed.stdout
    directory = invoke("batch", SCENARIOS, "--tag", "all", *common)
    assert directory.exit_code == 0, directory.output  # every example under its own name
    with connect() as store:
        names = {e.scenario_id for e in store.list_episodes(tag="all")}
    assert "bakery-negotiation" in names and len(names) == len(list(SCENARIOS.glob("*.json")))
