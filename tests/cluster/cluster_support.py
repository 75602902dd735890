"""Real parts of the cluster tests and benchmark: Debian's ``redis-server`` on a loopback
port, and a local Ray cluster of a head and more nodes, each a separate ``ray start
--block`` process group, so one node can be killed alone and everything is stopped
without touching any other Ray on the machine."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import redis

import sotopia_are as sa

NAMES = ["Mara Quinn", "Teo Alvarez"]
RAY = str(Path(sys.executable).parent / "ray")
"""The ``ray`` command of this environment (its nodes run this environment's Python)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def redis_server_binary() -> str | None:
    """Debian's ``redis-server`` (what CI installs), else any on PATH."""
    for candidate in ("/usr/bin/redis-server", shutil.which("redis-server")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


class RedisServer:
    """``redis-server`` on a free loopback port, nothing saved; :meth:`stop` ends it."""

    def __init__(self, binary: str, directory: Path) -> None:
        self.port = free_port()
        directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(directory),
             "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{binary} did not start on port {self.port}") from None
                time.sleep(0.02)
        client.close()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


class RayCluster:
    """A head (``--num-cpus=1``) on free ports, and nodes added with :meth:`add_node`; each
    node is a ``ray start --block`` process in its own process group."""

    def __init__(self, temp_dir: Path) -> None:
        self.port = free_port()
        self.client_port = free_port()
        self.nodes: list[subprocess.Popen[bytes]] = []
        self.logs = temp_dir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self._start(
            "--head", f"--port={self.port}", f"--ray-client-server-port={self.client_port}",
            "--include-dashboard=false", f"--temp-dir={temp_dir / 'ray'}",
        )  # fmt: skip

    @property
    def address(self) -> str:
        """The head's GCS address, for a driver on this machine."""
        return f"127.0.0.1:{self.port}"

    @property
    def client_address(self) -> str:
        """The ``ray://`` address of the head's client server."""
        return f"ray://127.0.0.1:{self.client_port}"

    def add_node(self) -> subprocess.Popen[bytes]:
        return self._start(f"--address={self.address}")

    def wait_for_cpus(self, cpus: int, timeout_s: float = 90.0) -> None:
        """Until the cluster's live nodes have ``cpus`` CPUs (every node joined, or a
        killed one is known to be gone)."""
        probe = (
            "import sys, time, ray\n"
            f"ray.init(address={self.address!r}, logging_level='ERROR')\n"
            f"deadline = time.monotonic() + {timeout_s}\n"
            "live = lambda: sum(n['Resources'].get('CPU', 0) for n in ray.nodes() if n['Alive'])\n"
            f"while live() != {cpus}:\n"
            "    if time.monotonic() > deadline: sys.exit(1)\n"
            "    time.sleep(0.2)\n"
        )
        done = subprocess.run([sys.executable, "-c", probe], timeout=timeout_s + 30, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"the Ray cluster did not reach {cpus} CPUs; see {self.logs}")

    def kill(self, node: subprocess.Popen[bytes]) -> None:
        """SIGKILL everything of a node at once, as when its machine dies: its process
        group and every descendant (Ray's workers start sessions of their own)."""
        if node.poll() is not None:
            return
        doomed = _descendants(node.pid)
        os.killpg(node.pid, signal.SIGKILL)
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError):  # it died with its raylet
                os.kill(pid, signal.SIGKILL)
        node.wait()

    def stop(self) -> None:
        """Kill every node, the head last (a graceful ``ray stop`` takes half a minute);
        the workers of a killed raylet exit by themselves."""
        for node in reversed(self.nodes):
            self.kill(node)

    def _start(self, *args: str) -> subprocess.Popen[bytes]:
        log = (self.logs / f"node{len(self.nodes)}.log").open("wb")
        node = subprocess.Popen(
            [RAY, "start", *args, "--num-cpus=1", "--node-ip-address=127.0.0.1",
             "--object-store-memory=100000000", "--disable-usage-stats", "--block"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.nodes.append(node)
        return node


def _descendants(root: int) -> list[int]:
    """Every live process under ``root`` (from ``/proc``)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command may hold spaces and parentheses: the fields follow the last ")".
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def spec(name: str, max_turns: int = 4) -> sa.EpisodeSpec:
    return sa.EpisodeSpec(
        episode_id=name,
        scenario=f"A bakery before closing [{name}].",
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=max_turns,
    )
