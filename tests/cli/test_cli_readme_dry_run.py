"""The docs' dry run (Getting started), command by command, against the stand-in as a user
starts it."""

import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import invoke

from sotopia_are.storage import connect

PAGE = Path(__file__).parents[2] / "docs" / "getting-started.md"


def _dry_run_commands() -> list[str]:
    text = PAGE.read_text("utf-8")
    block = re.search(r"<!-- dry-run -->\n```bash\n(.*?)```", text, re.S)
    assert block, "the getting-started page has no dry-run block"
    return [line for line in block.group(1).splitlines() if line.strip()]


@pytest.fixture
def port() -> Iterator[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free: int = probe.getsockname()[1]
    yield free


def test_the_readme_dry_run_plays_rates_and_rerates_a_batch(
    redis_url: str, port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).parents[2])
    commands = _dry_run_commands()
    server_line, export_line, *cli_lines = commands
    assert server_line == "python -m sotopia_are.testing --port 8000 &"
    server = subprocess.Popen(
        [sys.executable, "-m", "sotopia_are.testing", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None and "test server" in server.stdout.readline()
        env = dict(item.split("=", 1) for item in shlex.split(export_line.removeprefix("export ")))
        env["SOTOPIA_ARE_API_BASE"] = env["SOTOPIA_ARE_API_BASE"].replace("8000", str(port))
        runs: list[list[str]] = []
        for _ in range(2):  # the block runs again on the same store
            outputs = []
            for line in cli_lines:
                args = shlex.split(line)
                assert args[0] == "sotopia-are"
                args = [str(tmp_path / a) if a.endswith(".jsonl") else a for a in args[1:]]
                result = invoke(*args, env=env)
                assert result.exit_code == 0, (line, result.output)
                outputs.append(result.stdout)
            runs.append(outputs)
    finally:
        server.terminate()
        server.wait(timeout=10)
    (batch_out, evaluate_out, list_out, _), again = runs
    assert "already complete 4, to rate only 0, to play 0" in again[0]
    assert "0 rated, 4 skipped" in again[1]
    assert again[2] == list_out
    assert "batch dry: 4/4 done, 0 failed, 0 running" in batch_out
    assert "judge openai/second-judge (goal_only): 4 rated, 0 skipped" in evaluate_out
    # A heading, the four episodes, then where their scores came from.
    assert len(list_out.splitlines()) == 7
    assert list_out.splitlines()[5] == "scores from judge openai/second-judge, rubric goal_only"
    assert "choose with --judge MODEL" in list_out.splitlines()[6]
    assert len((tmp_path / "dry.jsonl").read_text("utf-8").splitlines()) == 4
    with connect() as store:
        records = [store.load(i) for i in store.episode_ids(tag="dry")]
    # seed=1 is the study's: each request draws its own, so the four repeats differ.
    assert len({record.transcript() for record in records}) == 4
    kinds = {e.action.action_type for r in records for e in r.entries if e.action is not None}
    assert {"speak", "non-verbal communication", "leave"} <= kinds
    assert any(e.to for r in records for e in r.entries)  # a private word was said
    for record in records:
        assert [v.judge_model for v in record.verdicts] == ["openai/dry-run", "openai/second-judge"]
        assert all(v.rated for v in record.verdicts)
        assert len({c.params["seed"] for c in record.calls}) == len(record.calls)
        scores = record.verdicts[0].scores
        assert len({s["overall_score"] for s in scores.values()}) > 1  # ratings differ
