"""An offline dry run: the standalone stand-in server plays along, so the commands a
study uses play and rate episodes without a model."""

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from cli_support import SCENARIOS, invoke

from sotopia_are.storage import connect


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def stand_in() -> Iterator[str]:
    """``python -m sotopia_are.testing`` as a user starts it; its API base."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "sotopia_are.testing", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert "OpenAI-compatible test server" in server.stdout.readline()
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_run_against_the_standalone_stand_in_plays_and_rates(redis_url: str, stand_in: str) -> None:
    spec = SCENARIOS / "bakery_negotiation.json"
    result = invoke(
        "run", spec, "--model", "openai/dry-run", "--api-base", stand_in,
        "--max-turns", "2", "--tag", "dry",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with connect() as store:
        (episode,) = store.list_episodes(tag="dry")
        record = store.load(episode.pk)
    assert record.status == "complete" and record.turns_played == 2
    assert record.verdict is not None and record.verdict.rated
