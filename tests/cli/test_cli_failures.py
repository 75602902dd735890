"""What the CLI does when things go wrong: a judge that cannot rate, an episode that dies
(Ctrl-C, a worker error), resuming what was left, importing over stored episodes,
exports that cannot finish, a reader that goes away."""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cli_support import BAKERY, MODEL, SCENARIOS, invoke, judge_reply

from sotopia_are.social import EpisodeSpec
from sotopia_are.storage import EpisodeRecorder, EpisodeStatus, connect
from sotopia_are.storage.keys import episode_calls_key
from sotopia_are.testing import LocalLLMServer, Reply, ReplyLike

BAKERY_SPEC = SCENARIOS / "bakery_negotiation.json"
SPEAK = json.dumps({"action_type": "speak", "argument": "Let us meet halfway."})
LEAVE = json.dumps({"action_type": "leave", "argument": ""})


def is_judge(body: Mapping[str, Any]) -> bool:
    return "impartial expert judge" in body["messages"][0]["content"]


def judge_answers(judge: ReplyLike, agent: str = LEAVE) -> Any:
    """Agents answer ``agent``; the judge ``judge``."""
    return lambda body: judge if is_judge(body) else agent


def specs_file(tmp_path: Path, count: int = 2) -> Path:
    spec = json.loads(BAKERY_SPEC.read_text())
    lines = [json.dumps({**spec, "episode_id": f"b{n}", "max_turns": 2}) for n in range(count)]
    path = tmp_path / "bakery.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def batch_args(tmp_path: Path, server: LocalLLMServer, *more: str) -> tuple[Any, ...]:
    return ("batch", specs_file(tmp_path), "--model", MODEL, "--api-base", server.url,
            "--workers", "1", "--tag", "bk", *more)  # fmt: skip


# -- the judge's failure shows in exit codes ------------------------------------------


def test_cli_run_exits_1_when_the_judge_cannot_rate(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = judge_answers("this is not a rating", SPEAK)
    result = invoke("run", BAKERY_SPEC, "--model", MODEL, "--api-base", llm_server.url,
                    "--max-turns", "2", "--tag", "r")  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "every judge sample failed" in result.stdout and "Traceback" not in result.output
    with connect() as store:
        (episode,) = store.list_episodes(tag="r")
    assert episode.status is EpisodeStatus.COMPLETE and not episode.scores


def test_cli_demo_exits_1_when_the_llm_episode_fails(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = lambda body: "no JSON action here"
    result = invoke("demo", "--model", MODEL, "--api-base", llm_server.url,
                    "-o", tmp_path / "d.json")  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "ended: failed" in result.stdout


def test_cli_batch_counts_unrated_episodes_and_resume_rates_them(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = judge_answers("this is not a rating")
    first = invoke(*batch_args(tmp_path, llm_server))
    assert first.exit_code == 1, first.output
    assert "judge failed (complete, not rated)" in first.stdout
    assert "not rated: " in first.stdout
    llm_server.rule = judge_answers(judge_reply(BAKERY))
    before = len(llm_server.chat_requests)
    resumed = invoke(*batch_args(tmp_path, llm_server, "--resume"))
    assert resumed.exit_code == 0, resumed.output
    # Only the judge ran: one rating per episode, no agent replayed its turns.
    new = llm_server.chat_requests[before:]
    assert len(new) == 2 and all(is_judge(request.body) for request in new)
    with connect() as store:
        episodes = store.list_episodes(tag="bk")
    assert len(episodes) == 2 and all(set(e.scores) == set(BAKERY) for e in episodes)
    # The totals are the agent's stored call (it left at once) plus the new verdict's; the
    # failed verdict's calls stay in the calls stream but no longer count.
    assert [e.usage["calls"] for e in episodes] == [1 + 1, 1 + 1]


# -- dead episodes are stored incomplete; resume reruns them ------------------------------


def test_cli_batch_worker_error_stores_incomplete_and_points_at_resume(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    # A judge refusing the key is a configuration error: it stops the worker.
    llm_server.rule = judge_answers(Reply.error(401, "invalid api key"))
    result = invoke(*batch_args(tmp_path, llm_server))
    assert result.exit_code == 1
    assert "a worker stopped: " in result.stderr and "--resume" in result.stderr
    assert "Traceback" not in result.output
    with connect() as store:
        assert not store.list_episodes(tag="bk", status=EpisodeStatus.RUNNING)


def test_cli_batch_resume_reruns_incomplete_and_stale_running_episodes(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = lambda body: LEAVE
    args = batch_args(tmp_path, llm_server, "--no-evaluate")
    assert invoke(*args).exit_code == 0
    with connect() as store:
        running, incomplete = (store.get_episode(pk) for pk in store.episode_ids(tag="bk"))
        for episode in (running, incomplete):
            store.delete_episode(episode.pk)
            assert episode.spec is not None
            EpisodeRecorder(store, tag="bk", models=dict.fromkeys(BAKERY, MODEL)).start(
                EpisodeSpec.model_validate(episode.spec)
            )
        store.mark_incomplete(incomplete.pk)
    fresh = invoke(*args, "--resume")
    # The batch is not finished while another run still plays one of its episodes.
    assert fresh.exit_code == 1, fresh.output
    assert "leaving 1 episodes to the run still playing them" in fresh.stdout
    assert "1 of 2 episodes unfinished: 1 left to a run still playing them" in fresh.stderr
    with connect() as store:
        assert store.get_episode(incomplete.pk).status is EpisodeStatus.COMPLETE
        assert store.get_episode(running.pk).status is EpisodeStatus.RUNNING
    stale = invoke(*args, "--resume", "--stale-after", "0")
    assert stale.exit_code == 0, stale.output
    with connect() as store:
        assert store.get_episode(running.pk).status is EpisodeStatus.COMPLETE
        assert store.get_episode(running.pk).attempt == 2


def test_cli_evaluate_refuses_an_unfinished_episode(redis_url: str) -> None:
    spec = EpisodeSpec.model_validate_json(BAKERY_SPEC.read_text()).for_run()
    with connect() as store:
        EpisodeRecorder(store, tag="x").start(spec)
    result = invoke("evaluate", spec.episode_id, "--model", MODEL)
    assert result.exit_code == 1
    assert f"episode {spec.episode_id} is running, not complete" in result.stderr
    assert "ScriptExhausted" not in result.output


def start_mid_episode(
    args: list[str], tag: str, redis_url: str, *, own_session: bool = False
) -> subprocess.Popen[str]:
    """Start ``sotopia-are ARGS`` in a subprocess; return once its first event is stored."""
    process = subprocess.Popen(
        [sys.executable, "-c", "from sotopia_are.cli import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "REDIS_OM_URL": redis_url},
        start_new_session=own_session,
    )
    with connect() as store:
        deadline = time.monotonic() + 60
        while not any(e.event_count for e in store.list_episodes(tag=tag)):
            if time.monotonic() >= deadline or process.poll() is not None:
                process.kill()
                raise AssertionError(f"no event stored: {process.communicate()[1]}")
            time.sleep(0.05)
    return process


def test_cli_run_ctrl_c_stores_incomplete_and_exits_130(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = lambda body: SPEAK
    llm_server.latency = 0.2  # slow replies: the episode is mid-way when Ctrl-C comes
    args = ["run", str(BAKERY_SPEC), "--model", MODEL, "--api-base", llm_server.url,
            "--no-evaluate", "--max-turns", "50", "--tag", "sigint"]  # fmt: skip
    process = start_mid_episode(args, "sigint", redis_url)
    try:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert "stored as incomplete" in stderr and "Traceback" not in stderr
    with connect() as store:
        (episode,) = store.list_episodes(tag="sigint")
    assert episode.status is EpisodeStatus.INCOMPLETE and "interrupted" in episode.error


def test_cli_batch_ctrl_c_with_workers_points_at_resume(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = lambda body: SPEAK
    llm_server.latency = 0.2
    args = ["batch", str(specs_file(tmp_path)), "--model", MODEL, "--api-base", llm_server.url,
            "--no-evaluate", "--workers", "2", "--tag", "bk"]  # fmt: skip
    # A session of its own: Ctrl-C goes to the whole process group, workers included.
    process = start_mid_episode(args, "bk", redis_url, own_session=True)
    try:
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert "rerun with --resume" in stderr and "Traceback" not in stderr
    with connect() as store:
        assert not store.list_episodes(tag="bk", status=EpisodeStatus.RUNNING)
        incomplete = store.list_episodes(tag="bk", status=EpisodeStatus.INCOMPLETE)
        complete = store.list_episodes(tag="bk", status=EpisodeStatus.COMPLETE)
    assert incomplete
    # What it says the store holds is what the store holds.
    held = [f"{len(complete)} complete (0 rated)"] if complete else []  # --no-evaluate
    held.append(f"{len(incomplete)} incomplete")
    assert f"the store holds of batch bk: {', '.join(held)}\n" in stderr


# -- import, export --------------------------------------------------------------------


def test_cli_import_refuses_stored_ids_unless_replace(redis_url: str, tmp_path: Path) -> None:
    assert invoke("demo", "-o", tmp_path / "d.json", env={"SOTOPIA_ARE_MODEL": ""}).exit_code == 0
    out = tmp_path / "all.jsonl"
    assert invoke("export", "--all", "-o", out).exit_code == 0
    with connect() as store:
        first, second = store.episode_ids()
        store.delete_episode(first)
    refused = invoke("import", out)
    assert refused.exit_code == 1
    assert f"episode {second} already exists" in refused.stderr and "--replace" in refused.stderr
    with connect() as store:
        assert store.episode_ids() == [second]  # nothing written, not even the free id
    replaced = invoke("import", out, "--replace")
    assert replaced.exit_code == 0, replaced.output
    with connect() as store:
        assert store.episode_ids() == [first, second]
    are = tmp_path / "one.json"
    assert invoke("export", second, "--format", "are", "-o", are).exit_code == 0
    again = invoke("import", are)
    assert again.exit_code == 1 and f"episode {second} already exists" in again.stderr


def test_cli_are_export_import_keeps_an_unfinished_status(redis_url: str, tmp_path: Path) -> None:
    spec = EpisodeSpec.model_validate_json(BAKERY_SPEC.read_text())
    with connect() as store:
        EpisodeRecorder(store).start(spec)
        store.mark_incomplete(spec.episode_id)
    are = tmp_path / "e.json"
    assert invoke("export", spec.episode_id, "--format", "are", "-o", are).exit_code == 0
    with connect() as store:
        store.delete_episode(spec.episode_id)
    assert invoke("import", are).exit_code == 0
    with connect() as store:
        assert store.get_episode(spec.episode_id).status is EpisodeStatus.INCOMPLETE


def test_cli_export_that_fails_leaves_the_old_file(redis_url: str, tmp_path: Path) -> None:
    assert invoke("demo", "-o", tmp_path / "d.json", env={"SOTOPIA_ARE_MODEL": ""}).exit_code == 0
    out = tmp_path / "all.jsonl"
    out.write_text("the previous export\n")
    with connect() as store:
        last = store.episode_ids()[-1]
        store.client.xadd(episode_calls_key(last), {"call": "{not json"})
    result = invoke("export", "--all", "-o", out)
    assert result.exit_code == 1
    assert out.read_text() == "the previous export\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_cli_list_into_a_closed_pipe_is_quiet(redis_url: str) -> None:
    # An empty store: --allow-empty makes its one line go to stdout, into the closed pipe.
    command = [
        sys.executable, "-c", "from sotopia_are.cli import main; main()", "list", "--allow-empty"
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "REDIS_OM_URL": redis_url},
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader goes away, as `| head` does
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141, stderr
    assert stderr == ""


# -- small things -------------------------------------------------------------------


def test_cli_show_unknown_agent_prints_nothing_else(redis_url: str) -> None:
    spec = EpisodeSpec.model_validate_json(BAKERY_SPEC.read_text())
    with connect() as store:
        EpisodeRecorder(store).start(spec)
    result = invoke("show", spec.episode_id, "--as", "Nobody")
    assert result.exit_code == 1 and result.stdout == ""
    assert "unknown agent 'Nobody'" in result.stderr


def test_cli_scenario_validate_an_episode_spec_hints_at_run() -> None:
    result = invoke("scenario", "validate", BAKERY_SPEC)
    assert result.exit_code == 1
    assert "looks like an episode spec" in result.stderr and "sotopia-are run" in result.stderr
