"""`sotopia-are host` end to end — the issue's "done when": a real server (uvicorn) in its
own process, a person (an HTTP client) playing Jo Ng through the printed join URL behind
a reverse-proxy prefix, the monitor listing the session, the session stored with the
person's seat marked human, no token in any log, and `sotopia-are evaluate` rating the
stored record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hosting_support import GARDEN

from sotopia_are.storage import connect
from sotopia_are.testing import LocalLLMServer

CONSENT = "You will discuss a garden plot with two others.\nYour words are recorded."


@pytest.fixture
def hosting(stand_in: LocalLLMServer, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    consent = tmp_path / "consent.txt"
    consent.write_text(CONSENT + "\n", encoding="utf-8")
    env = {**os.environ, "SOTOPIA_ARE_DATA_DIR": str(tmp_path / "data")}
    env.pop("REDIS_OM_URL", None)
    command = [
        sys.executable, "-m", "sotopia_are", "host", str(GARDEN),
        "--human", "Jo Ng", "--model", "openai/stand-in", "--api-base", stand_in.url,
        "--api-key", "sk-test", "--port", "0", "--root-path", "/study",
        "--turn-timeout", "20", "--completion-code", "GARDEN-42", "--consent", str(consent),
    ]  # fmt: skip
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def test_host_prints_join_urls_and_stores_the_persons_session_which_evaluate_rates(
    hosting: subprocess.Popen[str], stand_in: LocalLLMServer, tmp_path: Path
) -> None:
    assert hosting.stdout is not None and hosting.stderr is not None
    lines = [hosting.stdout.readline().strip() for _ in range(2)]
    assert lines[0].startswith("join Jo Ng: http://127.0.0.1:"), lines
    assert lines[1].startswith("monitor: http://127.0.0.1:"), lines
    join_url = lines[0].removeprefix("join Jo Ng: ")
    monitor_token = lines[1].partition("#t=")[2]
    page, _, fragment = join_url.partition("#t=")
    assert page.endswith("/study/join")
    token = fragment
    # The proxy strips /study: the server answers at its root.
    base = page.removesuffix("/study/join")
    headers = {"Authorization": f"Bearer {token}"}
    errors: list[str] = []
    stderr_text: list[str] = []
    reader = threading.Thread(target=lambda: stderr_text.append(hosting.stderr.read()))  # type: ignore[union-attr]
    reader.start()
    with httpx.Client(base_url=base, timeout=30) as http:
        assert http.get("/join").status_code == 200
        intro = http.get("/api/seat/consent", headers=headers).json()
        assert intro == {"seat": "Jo Ng", "consent": CONSENT, "arrived": False}
        view = http.post(
            "/api/seat/join", json={"participant": "PROLIFIC-123"}, headers=headers
        ).json()
        # The monitor lists the session, with Jo Ng arrived (and its own token only).
        assert http.get("/monitor").status_code == 200
        monitor = {"Authorization": f"Bearer {monitor_token}"}
        assert http.get("/api/monitor", headers=headers).status_code == 404
        (row,) = http.get("/api/monitor", headers=monitor).json()["sessions"]
        jo = next(seat for seat in row["seats"] if seat["name"] == "Jo Ng")
        assert (jo["player"], jo["arrived"]) == ("human", True)
        assert row["state"] in ("running", "finished")
        deadline = time.monotonic() + 120
        number = 0
        while view["state"] not in ("finished", "failed") and time.monotonic() < deadline:
            if view["your_turn"]:
                number += 1
                answer = http.post(
                    "/api/seat/actions",
                    json={
                        "client_id": f"jo-{number}",
                        "action": {"action_type": "speak", "argument": f"Herbs, take {number}."},
                    },
                    headers=headers,
                )
                if answer.status_code != 200:
                    errors.append(answer.text)
            view = http.get(
                "/api/seat/changes", params={"since": view["version"]}, headers=headers
            ).json()
    assert not errors
    assert view["state"] == "finished" and view["completion_code"] == "GARDEN-42"
    hosting.wait(timeout=60)
    reader.join(timeout=10)
    assert hosting.returncode == 0, stderr_text
    rest = hosting.stdout.read()
    assert "stored " in rest
    for text in (*stderr_text, rest):
        assert token not in text
    with connect(data_dir=tmp_path / "data") as store:
        (summary,) = store.summaries(tag="hosted")
        record = store.load(summary.episode_id)
        assert record.models["Jo Ng"] == "human"
        said = [a.argument for name, a in record.actions() if name == "Jo Ng"]
        assert said and said[0] == "Herbs, take 1."
        metadata = store.get_episode(summary.episode_id).metadata
        humans = metadata["hosting"]["humans"]  # type: ignore[index,call-overload]
        participant = humans["Jo Ng"]["participant"]
        assert participant and "PROLIFIC-123" not in json.dumps(metadata)
        assert row["episode_id"] == summary.episode_id
        assert record.verdicts == ()
    # Rated afterwards like any episode, by the CLI.
    evaluate = [
        sys.executable, "-m", "sotopia_are", "evaluate", "--tag", "hosted",
        "--judge-model", "openai/stand-in", "--api-base", stand_in.url,
        "--api-key", "sk-test", "--data-dir", str(tmp_path / "data"),
    ]  # fmt: skip
    rated = subprocess.run(
        evaluate,
        env={k: v for k, v in os.environ.items() if k != "REDIS_OM_URL"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rated.returncode == 0, rated.stdout + rated.stderr
    with connect(data_dir=tmp_path / "data") as store:
        record = store.load(summary.episode_id)
        (verdict,) = record.verdicts
        assert verdict.judge_model == "openai/stand-in"
        assert set(record.scores) == set(record.spec.agent_names)
        assert not record.failed_or_unrated
        assert record.models["Jo Ng"] == "human"
