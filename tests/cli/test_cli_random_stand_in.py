"""A batch against ``python -m sotopia_are.testing --random``: a stand-in server that
answers random instances of the schema sent, as a server enforcing it may. Before every
schema-true answer was accepted, 10 of 10 garden-committee episodes failed."""

import subprocess
import sys
from collections.abc import Iterator

import pytest
from cli_support import SCENARIOS, invoke
from test_cli_dry_run import free_port

from sotopia_are.storage import connect


@pytest.fixture
def random_stand_in() -> Iterator[str]:
    """``python -m sotopia_are.testing --random`` as a user starts it; its API base."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "sotopia_are.testing", "--port", str(port), "--random"],
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


def test_a_batch_against_random_schema_instances_completes_and_rates_every_episode(
    redis_url: str, random_stand_in: str
) -> None:
    result = invoke(
        "batch", SCENARIOS / "garden_committee.json", "-n", "3", "--model", "openai/random",
        "--api-base", random_stand_in, "--workers", "1", "--tag", "random",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with connect() as store:
        records = [store.load(e.pk) for e in store.list_episodes(tag="random")]
    assert len(records) == 3
    assert all(r.status == "complete" and not r.failed_or_unrated for r in records)
