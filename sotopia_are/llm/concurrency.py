"""Bounded concurrency per model endpoint, shared by everything in the process.

Each endpoint's bound is an :class:`AdaptiveLimit`: at most its limit of requests in
flight, the limit halved when the server says it is taking too many (a 429, or a 503)
and raised again by one after each run of as many successful requests as the limit
(additive increase, multiplicative decrease, as TCP does), never above the configured
ceiling.

asyncio primitives belong to one event loop, and tests (or threads) run many loops, so
the registry keeps one limit per (event loop, endpoint). Loops are held weakly: a
closed and forgotten loop takes its limits with it. This registry is the one piece
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
import collections
import itertools
import logging
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

__all__ = ["CONCURRENCY", "AdaptiveLimit", "ConcurrencyRegistry", "InFlight", "SharedLimit"]

_log = logging.getLogger(__name__)


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


class AdaptiveLimit:
    """At most :attr:`limit` holders at once, the limit adapting to the server between 1
    and :attr:`ceiling` (on one event loop; not thread-safe).

    :meth:`acquire` waits for a slot (first come, first served) and returns the limit's
    *epoch*; :meth:`release` gives the slot back with what became of the request:
    ``throttled`` (the server said too many requests) halves the limit — once per epoch,
    so the burst of 429s that one overload sends back lowers it once, not once per
    request sent before it — and ``ok`` counts toward raising it by one after each run of
    :attr:`limit` successes without a 429. ``async with`` holds a slot and reports no
    outcome.
    """

    def __init__(self, ceiling: int, *, name: str = "") -> None:
        if ceiling < 1:
            raise ValueError(f"concurrency limit must be at least 1, got {ceiling}")
        self.ceiling = ceiling
        self.limit = ceiling
        self.name = name
        self.epoch = 0
        self._held = 0
        self._successes = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    @property
    def held(self) -> int:
        """Slots held now."""
        return self._held

    def locked(self) -> bool:
        """Whether an :meth:`acquire` would wait."""
        return self._held >= self.limit or bool(self._waiters)

    async def acquire(self) -> int:
        """Wait for a slot; return the epoch to hand back to :meth:`release`."""
        if self._held < self.limit and not self._waiters:
            self._held += 1
            return self.epoch
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                # Given a slot, then cancelled before running: pass the slot on.
                self._held -= 1
                self._wake()
            else:
                self._waiters.remove(waiter)
            raise
        return self.epoch

    def release(
        self, epoch: int | None = None, *, ok: bool = False, throttled: bool = False
    ) -> None:
        """Give a slot back, with its request's outcome (see the class)."""
        self._held -= 1
        if throttled:
            self._throttled(epoch)
        elif ok and self.limit < self.ceiling:
            self._successes += 1
            if self._successes >= self.limit:
                self._successes = 0
                self.limit += 1
                self.epoch += 1
        self._wake()

    def _throttled(self, epoch: int | None) -> None:
        self._successes = 0
        if epoch is not None and epoch != self.epoch:
            return  # sent before the limit last changed: that change answered it
        lowered = max(1, self.limit // 2)
        if lowered < self.limit:
            _log.info(
                "%s asks for fewer requests: at most %d in flight from now (was %d)",
                self.name or "the endpoint",
                lowered,
                self.limit,
            )
        self.limit = lowered
        self.epoch += 1

    def _wake(self) -> None:
        while self._waiters and self._held < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._held += 1
                waiter.set_result(None)

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class ConcurrencyRegistry:
    """Limits keyed by (running event loop, endpoint key), and the requests in flight."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tickets = itertools.count()
        # Insertion order is start order, so the first entry is always the oldest.
        self._sent: dict[int, float] = {}
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, AdaptiveLimit]
        ] = weakref.WeakKeyDictionary()
        self.shared: SharedLimit | None = None
        """A limit shared with other processes that every request also holds (None: none)."""

    def limit(self, endpoint: str, ceiling: int) -> AdaptiveLimit:
        """This process's limit on ``endpoint``'s requests on the running loop: at most
        ``ceiling``, fewer for a while after a 429 (:class:`AdaptiveLimit`). A request
        also holds a slot of :attr:`shared`, when set (see :meth:`semaphore`).

        The first caller on a loop fixes the ceiling; asking for another ceiling for the
        same endpoint on that loop is a ``ValueError`` (two limits for one server cannot
        both hold).
        """
        if ceiling < 1:
            raise ValueError(f"concurrency limit must be at least 1, got {ceiling}")
        loop = asyncio.get_running_loop()
        with self._lock:
            slots = self._by_loop.setdefault(loop, {})
            found = slots.get(endpoint)
            if found is None:
                found = slots[endpoint] = AdaptiveLimit(ceiling, name=endpoint)
        if found.ceiling != ceiling:
            raise ValueError(
                f"endpoint {endpoint} already has a concurrency limit of {found.ceiling} in "
                f"this event loop; asked for {ceiling}. Use one max_concurrency per endpoint."
            )
        return found

    def semaphore(self, endpoint: str, limit: int) -> AbstractAsyncContextManager[None]:
        """What one request holds (``async with``): a slot of :meth:`limit`'s
        ``(endpoint, limit)`` and, with :attr:`shared`, one of its slots as well."""
        local = self.limit(endpoint, limit)
        return local if self.shared is None else _SharedGate(local, self.shared, endpoint)

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
    """This process's limit, then a slot of the shared limit: what one request holds."""

    def __init__(self, local: AdaptiveLimit, shared: SharedLimit, endpoint: str) -> None:
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
