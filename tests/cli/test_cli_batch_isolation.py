"""One episode's failure stays in that episode: a judge refusing one transcript leaves
that episode unrated and the batch goes on; a poisoned
episode is retried at most --max-attempts times; a worker killed with SIGKILL leaves its
episodes incomplete at once, and --resume reruns them."""

import json
import multiprocessing
import os
import signal
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cli_support import BAKERY, MODEL, SCENARIOS, invoke, judge_reply

from sotopia_are.storage import EpisodeStatus, connect
from sotopia_are.testing import LocalLLMServer, Reply, ReplyLike

LEAVE = json.dumps({"action_type": "leave", "argument": ""})
NO_CHOICES = Reply(
    body=json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode()
)
TOO_LONG = Reply.error(
    400, "This model's maximum context length is 8192 tokens (context_length_exceeded)"
)


def specs_file(tmp_path: Path, count: int) -> Path:
    """``count`` bakery specs; spec ``b<n>`` (its name, its episodes' scenario id) has a
    scenario ending with ``[b<n>]``, so a rule can tell whose request it answers."""
    spec = json.loads((SCENARIOS / "bakery_negotiation.json").read_text())
    lines = [
        json.dumps({**spec, "name": f"b{n}", "max_turns": 2,
                    "scenario": f"{spec['scenario']} [b{n}]"})
        for n in range(count)
    ]  # fmt: skip
    path = tmp_path / "bakery.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def whose(body: Mapping[str, Any]) -> str:
    text = " ".join(str(m.get("content", "")) for m in body["messages"])
    return next(f"b{n}" for n in range(8) if f"[b{n}]" in text)


def is_judge(body: Mapping[str, Any]) -> bool:
    return "impartial expert judge" in body["messages"][0]["content"]


def args(tmp_path: Path, server: LocalLLMServer, count: int, *more: str) -> tuple[Any, ...]:
    return ("batch", specs_file(tmp_path, count), "--model", MODEL, "--api-base", server.url,
            "--tag", "iso", *more)  # fmt: skip


def stored() -> dict[str, Any]:
    with connect() as store:
        return {e.pk: e for e in store.list_episodes(tag="iso")}


def test_a_judge_error_for_one_episode_leaves_it_unrated_and_the_batch_goes_on(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    # (A reply with no choices is retried as transient: test_studies_batch covers it.)
    faults = {"b1": TOO_LONG}

    def rule(body: Mapping[str, Any]) -> ReplyLike:
        if not is_judge(body):
            return LEAVE
        return faults.get(whose(body), judge_reply(BAKERY))

    llm_server.rule = rule
    result = invoke(*args(tmp_path, llm_server, 3, "--workers", "1", "--concurrency", "1"))
    assert result.exit_code == 1, result.output
    assert "a worker stopped" not in result.output and "Traceback" not in result.output
    assert "1 of 3 episodes unfinished: 1 not rated (the judge failed)" in result.stderr
    episodes = {e.scenario_id: e for e in stored().values()}
    # Every episode was played to the end; only the two poisoned ones are unrated.
    assert all(e.status is EpisodeStatus.COMPLETE for e in episodes.values())
    assert len(episodes) == 3 and {pk for pk, e in episodes.items() if e.scores} == {"b0", "b2"}
    with connect() as store:
        failures = {
            name: store.load(e.pk).verdicts[0].evaluation.failures[0]
            for name, e in episodes.items()
            if not e.scores
        }
    assert failures["b1"].error_type == "RequestRejectedError"
    assert "context_length_exceeded" in failures["b1"].error


def test_a_poisoned_episode_is_retried_at_most_max_attempts_times(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = lambda body: TOO_LONG if whose(body) == "b1" else LEAVE
    run = args(tmp_path, llm_server, 2, "--no-evaluate", "--workers", "1", "--max-attempts", "2")
    first = invoke(*run)
    assert first.exit_code == 1 and "1 of 2 episodes unfinished: 1 failed" in first.stderr
    assert invoke(*run, "--resume").exit_code == 1  # the second attempt fails alike
    (poisoned,) = [e for e in stored().values() if e.status is EpisodeStatus.FAILED]
    assert poisoned.attempt == 2 and "context_length_exceeded" in poisoned.error
    before = len(llm_server.chat_requests)
    third = invoke(*run, "--resume")
    assert len(llm_server.chat_requests) == before  # not played a third time
    assert third.exit_code == 1, third.output
    assert "not retrying 1 episodes started 2 times" in third.stdout
    assert f"given up: {poisoned.pk}: " in third.stdout
    assert "1 of 2 episodes unfinished: 1 given up after max_attempts" in third.stderr


def test_a_killed_worker_leaves_its_episodes_incomplete_and_resume_reruns_them(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    killed = threading.Event()

    def rule(body: Mapping[str, Any]) -> ReplyLike:
        # The first request comes from a worker playing an episode: kill -9 every worker.
        if not killed.is_set():
            killed.set()
            for worker in multiprocessing.active_children():
                os.kill(worker.pid or 0, signal.SIGKILL)
        return LEAVE

    llm_server.rule = rule
    run = args(tmp_path, llm_server, 2, "--repeat", "2", "--no-evaluate", "--workers", "2")
    first = invoke(*run)
    assert killed.is_set() and first.exit_code == 1, first.output
    assert "killed by SIGKILL" in first.stdout and "interrupted" in first.stderr
    episodes = stored().values()
    assert not [e for e in episodes if e.status is EpisodeStatus.RUNNING]
    assert any("worker process died (killed by SIGKILL)" in e.error for e in episodes)
    llm_server.rule = lambda body: LEAVE
    resumed = invoke(*run, "--resume", "--workers", "1")
    assert resumed.exit_code == 0, resumed.output
    assert "still playing" not in resumed.stdout
    assert len(stored()) == 4
    assert all(e.status is EpisodeStatus.COMPLETE for e in stored().values())
