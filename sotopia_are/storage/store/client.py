"""`StoreClient`: the store's Redis connection, shared by the store's parts.

Every write that touches more than one key runs in one MULTI/EXEC transaction (guarded
by WATCH where it depends on what is stored, :meth:`StoreClient._watched`), after the
appends queued before it. A lost connection, refused credentials and a server that
refuses writes (memory, read-only replica, disk) are storage errors naming the fix.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Sequence
from typing import Any, Self, TypeVar, cast

import redis

from sotopia_are.storage.embedded import EmbeddedRedis
from sotopia_are.storage.errors import (
    StorageConflictError,
    StorageRefusedError,
    StorageUnavailableError,
)
from sotopia_are.storage.queued import QueuedAppend, QueuedAppends
from sotopia_are.storage.store.script_connection import ScriptConnection
from sotopia_are.storage.store.written import WrittenEpisodes

__all__ = ["WRITE_ATTEMPTS", "StoreClient"]

T = TypeVar("T")

WRITE_ATTEMPTS = 50
"""How often a guarded write is tried before :class:`StorageConflictError`: a WATCHed key
changing under every attempt means writers are fighting over one record, which waiting
longer would not fix."""


class StoreClient(abc.ABC):
    """The store's Redis connection: its failures as storage errors, guarded transactions
    and the queued appends every write lands after (what the store's parts share).

    ``location`` says where the data is, for messages (never a password).
    """

    def __init__(
        self,
        client: redis.Redis[str],
        *,
        location: str,
        embedded: EmbeddedRedis | None = None,
        url: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.location = location
        self.embedded = embedded
        self._url = url
        self._clock = clock
        self._queued = QueuedAppends(self._write_appends)
        self._scripts = ScriptConnection(cast(Any, client).connection_pool)
        self._guarded = _Guard(self)
        self._written = WrittenEpisodes()

    @property
    def url(self) -> str | None:
        """A URL another process can connect to the same server with (the embedded
        server's unix socket, or the server's URL); None for a store built on a bare
        client."""
        if self.embedded is not None:
            return f"unix://{self.embedded.socket_path}"
        return self._url

    def ping(self) -> None:
        """Check the server answers; :class:`StorageUnavailableError` naming the fix if not."""
        with self._guard():
            self.client.ping()

    def close(self) -> None:
        """Write the queued appends, release the connection (and stop the embedded server
        if this was its last user)."""
        try:
            self._queued.flush()
        finally:
            self._scripts.close()
            self.client.close()
        if self.embedded is not None:
            self.embedded.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _guard(self) -> _Guard:
        """A context turning the Redis errors raised in it into storage errors: a lost
        connection or refused credentials into :class:`StorageUnavailableError`, a
        server's refusal to write into :class:`StorageRefusedError` (any other error
        reply is raised as it is)."""
        return self._guarded

    def _storage_error(self, error: BaseException) -> BaseException | None:
        """The storage error ``error`` (raised in :meth:`_guard`) is, or None to raise
        it as it is."""
        if isinstance(error, redis.AuthenticationError):  # a ConnectionError: first
            return StorageUnavailableError(f"{self.location} refused the credentials: {error}")
        if isinstance(error, (redis.ConnectionError, redis.TimeoutError)):
            return StorageUnavailableError(
                f"lost the connection to {self.location}: {error}. Fix: check that the server "
                "is running, then resume (completed episodes are kept and skipped)."
            )
        if isinstance(error, redis.ResponseError):
            return self._refusal(error)
        return None

    def _evalsha(
        self, sha: str, script: str, keys: Sequence[str], args: Sequence[str | bytes]
    ) -> Any:
        """``EVALSHA sha`` with ``keys`` and ``args`` (``script`` loaded first when the
        server lacks it): the reply and the errors ``Redis.evalsha`` gives (call it in
        :meth:`_guard`), sent on the connection the store keeps for its scripts (see
        :mod:`.script_connection`)."""
        try:
            return self._scripts.evalsha(sha, keys, args)
        except redis.exceptions.NoScriptError:  # the server lost it (or never had it)
            cast(Any, self.client).script_load(script)
            return self._scripts.evalsha(sha, keys, args)

    def _refusal(self, error: BaseException) -> StorageRefusedError | None:
        """The :class:`StorageRefusedError` a server's refusal to write (``error``) is, or
        None for any other reply."""
        said = str(error)
        if "maxmemory" in said:  # redis-py names it OutOfMemoryError (not in its stubs)
            return StorageRefusedError(
                f"{self.location} refuses writes: it is at its memory limit (maxmemory) and "
                "evicts nothing. Fix: free memory there (delete episodes no longer needed), "
                "raise its limit (CONFIG SET maxmemory), or use another server; then resume "
                "(completed episodes are kept and skipped).",
                "memory",
            )
        if isinstance(error, redis.exceptions.ReadOnlyError) or "READONLY" in said:
            return StorageRefusedError(
                f"{self.location} refuses writes: it is a read-only replica. Fix: point "
                "--redis-url (or REDIS_OM_URL) at the primary server, then resume.",
                "read-only",
            )
        if "MISCONF" in said:
            detail = said.split("MISCONF", 1)[1].strip()
            return StorageRefusedError(
                f"{self.location} refuses writes: it cannot save to disk (disk full or not "
                f"writable; it said: {detail}). Fix: free disk space or repair its data "
                "directory (see the server's log), then resume.",
                "disk",
            )
        return None

    def _watched(self, keys: list[str], body: Callable[[Any], T]) -> T:
        """Run ``body(pipe)`` with ``keys`` watched, retrying when another writer got there
        first; ``body`` reads in immediate mode, then calls ``pipe.multi()`` and writes.

        :class:`StorageConflictError` (nothing written) after :data:`WRITE_ATTEMPTS`
        attempts that all lost to another writer.
        """
        self._queued.flush()  # so that writes land in the order they were made
        self._written.forget(keys)  # what this write leaves there is read, not remembered
        with self._guard(), self.client.pipeline() as pipe:
            for _ in range(WRITE_ATTEMPTS):
                try:
                    if keys:
                        pipe.watch(*keys)
                    result = body(pipe)
                    pipe.execute()
                    return result
                except redis.WatchError:
                    continue
        raise StorageConflictError(
            f"gave up writing {', '.join(keys)} in {self.location} after {WRITE_ATTEMPTS} "
            "attempts: another writer changed it every time. Fix: let one process write "
            "each episode (one batch per tag), then retry."
        )

    @abc.abstractmethod
    def _write_appends(self, appends: Sequence[QueuedAppend]) -> list[str | BaseException]:
        """Write ``appends`` in one round trip (see :mod:`.appends`)."""


class _Guard:
    """:meth:`StoreClient._guard`'s context: one per store, holding no state of a use
    (so nested and interleaved uses are safe); a class, as a ``contextmanager``
    generator made anew for each of the store's round trips cost more than the
    translation."""

    __slots__ = ("_store",)

    def __init__(self, store: StoreClient) -> None:
        self._store = store

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _trace: object
    ) -> None:
        if error is not None and (translated := self._store._storage_error(error)) is not None:
            raise translated from error
