"""No orphans: after ``kill -9`` of a process using the embedded Redis, the next command on
the same data directory works, and once it exits no server of that directory is running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sotopia_are.storage import DATA_DIR_ENV, REDIS_URL_ENV, connect

# Connects, writes a key, says the server's pid once it is written, then waits to be killed.
_HOLDER = """
import sys, time
from sotopia_are.storage import connect
store = connect(data_dir=sys.argv[1])
store.client.set("kept", "yes")
print(store.embedded.pid, flush=True)
time.sleep(120)
"""
_CLI = "from sotopia_are.cli import main; main()"
_TIMEOUT_S = 60


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A data directory whose servers are all gone after the test, whatever it left."""
    monkeypatch.delenv(REDIS_URL_ENV, raising=False)
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    directory = tmp_path / "data"
    yield directory
    for pid in _servers_of(directory):
        os.kill(pid, signal.SIGKILL)


def _servers_of(data_dir: Path) -> list[int]:
    """Live (not zombie) ``redis-server`` processes working in ``data_dir``: Redis changes
    into the directory of its data files, so the working directory names its owner."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
            cwd = os.readlink(entry / "cwd")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if b"redis-server" in command and state != "Z" and Path(cwd) == data_dir.resolve():
            found.append(int(entry.name))
    return found


def _kill_holder(data_dir: Path) -> int:
    """Run the holder, SIGKILL it once its key is written; the server's pid."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(data_dir)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    server_pid = int(holder.stdout.readline())
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=_TIMEOUT_S)
    holder.stdout.close()
    return server_pid


def _run_dir(data_dir: Path) -> Path:
    """The private directory of the running server (its socket, pid file, config, log)."""
    registry = json.loads((data_dir / "redis.db.settings").read_text())
    return Path(registry["unixsocket"]).parent


def _list(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CLI, "list", "--allow-empty", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_S,
        check=False,
    )


def _assert_nothing_left(data_dir: Path) -> None:
    assert _servers_of(data_dir) == []
    assert not (data_dir / "redis.db.settings").exists()


def test_storage_killed_cli_next_command_reuses_the_server_then_stops_it(
    data_dir: Path,
) -> None:
    server_pid = _kill_holder(data_dir)
    assert _servers_of(data_dir) == [server_pid]  # the kill left it running
    run_dir = _run_dir(data_dir)

    listed = _list(data_dir)
    assert listed.returncode == 0, listed.stderr
    _assert_nothing_left(data_dir)
    assert not run_dir.exists()  # the killed starter's socket, config and log went with it
    with connect(data_dir=data_dir) as store:  # nothing was lost
        assert store.client.get("kept") == "yes"
    _assert_nothing_left(data_dir)


def test_storage_dead_server_with_a_recycled_pid_is_replaced(data_dir: Path) -> None:
    # The holder and its server both killed (an OOM kill, a container stop) leave a
    # registry whose pid file names a pid the system may give to any other process.
    server_pid = _kill_holder(data_dir)
    pidfile = _run_dir(data_dir) / "redis.pid"
    os.kill(server_pid, signal.SIGKILL)
    pidfile.write_text(str(os.getpid()))  # recycled: alive, but not a redis-server

    listed = _list(data_dir)
    assert listed.returncode == 0, listed.stderr
    _assert_nothing_left(data_dir)
    with connect(data_dir=data_dir) as store:  # replayed from the append-only file
        assert store.client.get("kept") == "yes"
    _assert_nothing_left(data_dir)


def test_storage_unregistered_server_of_a_killed_starter_is_stopped(data_dir: Path) -> None:
    # A starter killed after redis-server started but before its registry was written
    # leaves a server nobody can find; the next one must not start a second server on
    # the same files beside it, nor leave it running.
    server_pid = _kill_holder(data_dir)
    (data_dir / "redis.db.settings").unlink()

    listed = _list(data_dir)
    assert listed.returncode == 0, listed.stderr
    _assert_nothing_left(data_dir)
    assert server_pid not in _servers_of(data_dir)
