"""`sotopia-are benchmark` as a user runs it: SOTOPIA profiles imported, a sample of its
combinations played by two models against a partner on the stand-in server, the report
printed and written; Ctrl-C mid-run exits 130 and --resume finishes without playing a
complete episode again; --report-only rebuilds the same report from the store."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_support import invoke

from sotopia_are.record import EpisodeRecord
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import connect
from sotopia_are.testing import LocalLLMServer, play_rule

SUBSET = Path(__file__).parents[1] / "data" / "sotopia_subset"
MODELS = ["openai/model-a", "openai/model-b"]


def import_profiles() -> None:
    for name, kind in [("agent_profiles", "agents"), ("environment_profiles", "environments")]:
        result = invoke("import", SUBSET / f"{name}.jsonl", "--kind", kind)
        assert result.exit_code == 0, result.output


def args(server: LocalLLMServer, *more: str) -> list[str]:
    return [
        "benchmark", "--tasks", str(SUBSET / "env_agent_combos.jsonl"), "--sample", "2",
        "-m", MODELS[0], "-m", MODELS[1], "--partner", "openai/partner",
        "--judge-model", "openai/judge", "--api-base", server.url, "--max-turns", "3",
        "--tag", "bench", "--workers", "1", *more,
    ]  # fmt: skip


def stored() -> dict[str, EpisodeRecord]:
    with connect() as store:
        return {pk: store.load(pk) for pk in store.episode_ids(tag="bench")}


def test_benchmark_prints_and_writes_its_report(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = play_rule
    import_profiles()
    result = invoke(*args(llm_server, "--output", str(tmp_path / "out")))
    assert result.exit_code == 0, result.output
    assert "benchmark bench: 8 episodes" in result.stdout
    assert "openai/model-a vs" in result.stdout and "wins/ties/losses" in result.stdout
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [(r["model"], r["episodes"]) for r in report["results"]] == [(m, 4) for m in MODELS]
    goal = report["results"][0]["dimensions"]["goal"]
    assert f"{goal['mean']:.2f} [{goal['low']:.2f}, {goal['high']:.2f}]" in result.stdout
    assert (tmp_path / "out" / "results.csv").read_text().startswith("model,partner,dimension")

    again = invoke("benchmark", "--report-only", "--tag", "bench", "-o", str(tmp_path / "re"))
    assert again.exit_code == 0, again.output
    assert (tmp_path / "re" / "report.json").read_text() == (
        tmp_path / "out" / "report.json"
    ).read_text()


def test_benchmark_without_its_models_or_tasks_says_what_to_pass(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    no_partner = invoke("benchmark", "-m", "m", "--judge-model", "j", "--sample", "1")
    assert no_partner.exit_code == 1 and "--partner MODEL" in no_partner.stderr
    no_tasks = invoke("benchmark", "-m", "m", "--partner", "p", "--judge-model", "j")
    assert no_tasks.exit_code == 1 and "--tasks FILE" in no_tasks.stderr
    empty = invoke("benchmark", "-m", "m", "--partner", "p", "--judge-model", "j", "--sample", "1")
    assert empty.exit_code == 1 and "import SOTOPIA's or your own profiles" in empty.stderr
    missing = invoke("benchmark", "--report-only", "--tag", "nothing")
    assert missing.exit_code == 1 and "no episodes tagged 'nothing'" in missing.stderr


def test_ctrl_c_exits_130_and_resume_plays_no_complete_episode_again(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = play_rule
    llm_server.latency = 0.1  # slow replies, two episodes at once: some finish, some not
    import_profiles()
    # Spawned workers: the parent stops them at once (an in-process run waits on its
    # cancelled requests).
    command = [*args(llm_server), "--concurrency", "2", "--workers", "2"]
    process = subprocess.Popen(
        [sys.executable, "-c", "from sotopia_are.cli import main; main()", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "REDIS_OM_URL": redis_url},
        start_new_session=True,  # Ctrl-C reaches the whole process group
    )
    try:
        deadline = time.monotonic() + 60
        while not any(r.verdicts for r in stored().values()):
            assert time.monotonic() < deadline and process.poll() is None, process.stderr
            time.sleep(0.1)
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert "rerun with --resume" in stderr and "Traceback" not in stderr
    before = stored()
    rated = {pk: r for pk, r in before.items() if r.verdicts}
    played = {pk: r for pk, r in before.items() if r.status is EpisodeStatus.COMPLETE}
    assert rated and len(played) < 8

    llm_server.latency = 0.0
    resumed = invoke(*args(llm_server, "--resume"))
    assert resumed.exit_code == 0, resumed.output
    assert f"already complete {len(rated)}" in resumed.stdout
    after = stored()
    assert len(after) == 8 and all(r.verdicts for r in after.values())
    assert all(after[pk] == record for pk, record in rated.items())
    # A complete episode the judge had not rated yet is rated, not played again.
    assert all(after[pk].events == record.events for pk, record in played.items())


def test_benchmark_on_a_cluster_refuses_the_embedded_store_before_playing(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    import_profiles()
    result = invoke(*args(llm_server, "--cluster", "ray://127.0.0.1:1"))
    assert result.exit_code == 1, result.output
    assert "needs a Redis server every node reaches" in result.stderr
    assert not llm_server.chat_requests and not stored()
