"""A port already in use is one clear ``error:`` line and exit 1 wherever a port is
bound — the test server (``python -m sotopia_are.testing``) and the viewer
(``sotopia-are view``) — never a traceback."""

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


@pytest.mark.parametrize(
    "command",
    [
        ["-m", "sotopia_are.testing", "--port", "{port}"],
        ["-m", "sotopia_are", "view", "--port", "{port}"],
    ],
    ids=["test server", "viewer"],
)
def test_a_port_in_use_is_a_clear_error(
    command: list[str], taken_port: int, tmp_path: Path
) -> None:
    args = [str(taken_port) if a == "{port}" else a for a in command]
    env = {**os.environ, "SOTOPIA_ARE_DATA_DIR": str(tmp_path), "REDIS_OM_URL": ""}
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: cannot serve on 127.0.0.1:{taken_port}: ")
    assert "already in use" in done.stderr and "--port" in done.stderr
