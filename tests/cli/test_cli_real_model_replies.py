"""The commands with answers as real models write them: episodes complete, repairs are
counted and shown, a suspicious verdict is flagged in run, show and batch."""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cli_support import BAKERY, MODEL, SCENARIOS, invoke

from sotopia_are.evaluation import SOTOPIA_EVAL
from sotopia_are.storage import connect
from sotopia_are.testing import LocalLLMServer, ReplyLike

# What a real 1.5B model answered at every turn, and its judge's verdict on that.
IDLE = '{"action_type": "none", "argument": null, "to": null}'


def generous_judge(body: Mapping[str, Any]) -> ReplyLike:
    """Agents do nothing (in the form a real model wrote it); the judge gives everyone
    the top goal score, with a score written as text."""
    if "impartial expert judge" not in body["messages"][0]["content"]:
        return IDLE
    return json.dumps(
        {
            name: {
                d.name: {"reasoning": f"{name}: fine", "score": str(d.high)}
                for d in SOTOPIA_EVAL.dimensions
            }
            for name in BAKERY
        }
    )


def test_run_accepts_real_model_forms_and_flags_the_verdict(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = generous_judge
    spec = SCENARIOS / "bakery_negotiation.json"
    result = invoke("run", spec, "--model", MODEL, "--api-base", llm_server.url, "--tag", "idle")
    assert result.exit_code == 0, result.output
    # Three idle turns end it (two stale turns allowed); one judge call.
    assert "answers accepted after normalising their form: 4, after asking again: 0" in (
        result.stdout
    )
    assert "judge warning: Mara Quinn never spoke or acted, yet the judge gave goal 10" in (
        result.stdout
    )
    with connect() as store:
        (episode,) = store.list_episodes(tag="idle")
    shown = invoke("show", episode.pk)
    assert shown.exit_code == 0, shown.output
    assert f"judge: {MODEL}" in shown.stdout
    assert "judge warning: Teo Alvarez never spoke or acted" in shown.stdout
    assert "accepted after normalising their form: 4" in shown.stdout


def test_batch_lists_judge_warnings(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = generous_judge
    spec = json.loads((SCENARIOS / "bakery_negotiation.json").read_text())
    specs = tmp_path / "idle.jsonl"
    specs.write_text(json.dumps({**spec, "episode_id": "idle-1"}) + "\n")
    result = invoke(
        "batch", specs, "--model", MODEL, "--api-base", llm_server.url, "--workers", "1",
        "--output-mode", "json_schema",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "rated, with judge warnings" in result.stdout
    assert result.stdout.count("judge warning: ") == 2
    # --output-mode reached the worker: every request carried the schema.
    assert all(r.body["response_format"]["type"] == "json_schema" for r in llm_server.chat_requests)
