"""Bounded concurrency per model endpoint, shared by everything in the process.

asyncio primitives belong to one event loop, and tests (or threads) run many loops, so
the registry keeps one semaphore per (event loop, endpoint). Loops are held weakly: a
closed and forgotten loop takes its semaphores with it. This registry is the one piece
of process-wide mutable state in the LLM layer, by design: many episodes running at once
must share one limit per endpoint.

It also counts the requests in flight (sent, not yet answered) in the process, across
loops and endpoints, with the start of the oldest: what a progress display shows so that
a batch waiting on a stuck server does not look frozen.

A cluster worker sets :attr:`ConcurrencyRegistry.shared` to a :class:`SharedLimit` (kept in a
store every node reaches): each request then also holds one of its slots, so an endpoint's
limit holds across processes and machines, not only within this one.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

__all__ = ["CONCURRENCY", "ConcurrencyRegistry", "InFlight", "SharedLimit"]


class SharedLimit(Protocol):
    """A per-endpoint bound on requests in flight shared with other processes: ``acquire``
    waits for one of ``endpoint``'s slots, ``release`` gives back one this process holds."""

    async def acquire(self, endpoint: str) -> None: ...

    async def release(self, endpoint: str) -> None: ...


@dataclass(frozen=True)
class InFlight:
    """Requests sent and not yet answered: how many, and the age of the oldest (0 when
    there is none)."""

    count: int = 0
    oldest_s: float = 0.0

    def describe(self) -> str:
        """``3 calls in flight, oldest 47 s`` (empty when there is none)."""
        if not self.count:
            return ""
        calls = "1 call" if self.count == 1 else f"{self.count} calls"
        return f"{calls} in flight, oldest {self.oldest_s:.0f} s"


class ConcurrencyRegistry:
    """Semaphores keyed by (running event loop, endpoint key), and the requests in flight."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tickets = itertools.count()
        # Insertion order is start order, so the first entry is always the oldest.
        self._sent: dict[int, float] = {}
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, tuple[int, asyncio.Semaphore]]
        ] = weakref.WeakKeyDictionary()
        self.shared: SharedLimit | None = None
        """A limit shared with other processes that every request also holds (None: none)."""

    def semaphore(self, endpoint: str, limit: int) -> AbstractAsyncContextManager[None]:
        """The semaphore bounding ``endpoint`` to ``limit`` requests on the running loop
        (and, with :attr:`shared`, to its slots as well).

        The first caller on a loop fixes the limit; asking for another limit for the same
        endpoint on that loop is a ``ValueError`` (two limits for one server cannot both
        hold).
        """
        if limit < 1:
            raise ValueError(f"concurrency limit must be at least 1, got {limit}")
        loop = asyncio.get_running_loop()
        with self._lock:
            slots = self._by_loop.setdefault(loop, {})
            if endpoint not in slots:
                slots[endpoint] = (limit, asyncio.Semaphore(limit))
            current, semaphore = slots[endpoint]
        if current != limit:
            raise ValueError(
                f"endpoint {endpoint} already has a concurrency limit of {current} in this "
                f"event loop; asked for {limit}. Use one max_concurrency per endpoint."
            )
        return semaphore if self.shared is None else _SharedGate(semaphore, self.shared, endpoint)

    @contextmanager
    def sending(self) -> Iterator[None]:
        """Count one request in flight for the duration of the block."""
        with self._lock:
            ticket = next(self._tickets)
            self._sent[ticket] = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                del self._sent[ticket]

    def in_flight(self) -> InFlight:
        """The requests in flight in this process now (safe from any thread)."""
        with self._lock:
            count = len(self._sent)
            first = next(iter(self._sent.values()), None)
        return InFlight(count, 0.0 if first is None else time.monotonic() - first)


class _SharedGate:
    """This process's semaphore, then a slot of the shared limit: what one request holds."""

    def __init__(self, local: asyncio.Semaphore, shared: SharedLimit, endpoint: str) -> None:
        self._local, self._shared, self._endpoint = local, shared, endpoint

    async def __aenter__(self) -> None:
        await self._local.acquire()
        try:
            await self._shared.acquire(self._endpoint)
        except BaseException:
            self._local.release()
            raise

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._shared.release(self._endpoint)
        finally:
            self._local.release()


CONCURRENCY = ConcurrencyRegistry()
"""The process-wide registry every :class:`~sotopia_are.llm.session.LLMSession` uses."""
