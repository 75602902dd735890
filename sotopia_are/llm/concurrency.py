"""Bounded concurrency per model endpoint, shared by everything in the process.

Each endpoint's bound is an :class:`AdaptiveLimit`: at most its limit of requests in
flight, the limit starting low, growing while latency stays flat and shrinking when
latency grows with load, when the server says it is taking too many (a 429, or a 503) or
when a request outlives its timeout while others are answered — never above the
configured ceiling. Local model servers queue requests instead of refusing them, so
latency, not errors, is the signal to slow down.

asyncio primitives belong to one event loop, and tests (or threads) run many loops, so
the registry keeps one limit per (event loop, endpoint). Loops are held weakly: a
closed and forgotten loop takes its limits with it. This registry is the one piece
of process-wide mutable state in the LLM layer, by design: many episodes running at once
must share one limit per endpoint.

Each running loop also has a :class:`LoopLag`: how late that loop runs its callbacks,
which the limits take out of the latency of servers that report no service time, so that
a client short of CPU does not read its own lag as the server's queue.

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
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

__all__ = [
    "CONCURRENCY",
    "AdaptiveLimit",
    "ConcurrencyRegistry",
    "InFlight",
    "LoopLag",
    "SharedLimit",
    "part_of_slots",
]

_log = logging.getLogger(__name__)

_FAST = 0.2
"""Weight of a new answer in the recent latency (about the last ten answers)."""
_SLOW = 0.05
"""How far the latency floor rises toward recent latency each round (about twenty rounds)."""
_GROW_BELOW = 1.5
"""Grow while answers take less than 1.5 times the server's own time for them: up to half
a request waiting for a decoding slot, which keeps the slots busy between answers."""
_SHRINK_ABOVE = 2.0
"""Shrink once answers wait in the server's queue longer than it takes to compute them."""
_UNTIMED_SCALE = 1 / 3
"""Latency 4 times its floor counts as the 2.0 of a timed server (see ``_load``): latency
without a service time mixes short and long requests, so the band is wider."""
_TICK_S = 0.02
"""How often :class:`LoopLag` looks at its loop while requests are in flight. Each stall of
the loop is measured but for up to one tick (the part before the tick fell due), so this
stays well below the latency of a fast server (50 ms) for the discount to hold; 50 timers
a second cost next to nothing."""
_RECENT = 32
"""Answers kept for :attr:`AdaptiveLimit.slowest_recent_s`."""


class SharedLimit(Protocol):
    """A per-endpoint bound on requests in flight shared with other processes: ``acquire``
    waits for one of ``endpoint``'s slots, ``release`` gives back one this process holds."""

    async def acquire(self, endpoint: str) -> None: ...

    async def release(self, endpoint: str) -> None: ...


def part_of_slots(slots: int, index: int, parts: int) -> int:
    """Process ``index``'s part of a server's ``slots`` shared by ``parts`` processes: the
    parts add up to ``slots``, each at least one (when there are more processes than
    slots, some slots have two requests at once)."""
    return max(1, slots // parts + (index < slots % parts))


@dataclass(frozen=True)
class InFlight:
    """Requests sent and not yet answered: how many, and the age of the oldest (0 when
    there is none); ``limit``: how many the limits of the endpoints they wait on allow at
    once now (0 when unknown)."""

    count: int = 0
    oldest_s: float = 0.0
    limit: int = 0

    def describe(self) -> str:
        """``3 calls in flight (at most 4 now), oldest 47 s`` (empty when there is none)."""
        if not self.count:
            return ""
        calls = "1 call" if self.count == 1 else f"{self.count} calls"
        bound = f" (at most {self.limit} now)" if self.limit else ""
        return f"{calls} in flight{bound}, oldest {self.oldest_s:.0f} s"


class AdaptiveLimit:
    """At most :attr:`limit` holders at once, the limit adapting to the endpoint between 1
    and :attr:`ceiling` (on one event loop; not thread-safe).

    :meth:`acquire` waits for a slot (first come, first served) and returns the limit's
    *epoch*; :meth:`release` gives the slot back with what became of the request. The
    limit starts at ``initial`` (default: the ceiling) and is reconsidered once per round
    (as many answers as the limit):

    * it **grows** while latency stays flat: doubling each round until the first sign of
      overload (slow start), then by one;
    * it **shrinks** to three quarters when latency grew with load: the server's own
      queue time (``latency_s`` beyond the ``service_s`` it reported) averaging more than
      the service itself, or, where the server reports no service time, recent latency
      above 4 times its running floor — latency less the lag of our own event loop while
      the request was out (``lag_s``, see :class:`LoopLag`): the server's queue, not ours;
    * it **halves** on a 429/503 (``throttled``) or when a request waits past its timeout
      while the endpoint answers others (:meth:`overloaded`) — once per epoch, so the burst
      that one overload sends back lowers it once, not once per request sent before it.

    Past the slow start, a round counts only answers to requests sent under the current
    limit (its epoch): an answer to one sent before the limit last changed measured the old
    limit's load, and counting it would shrink the limit again for a queue the last change
    already cut.

    Once the server says how many requests it decodes at once (:meth:`serve_at_once`,
    llama.cpp's ``total_slots``), the limit is exactly this process's part of them (up to
    the ceiling; ``part`` is ``(i, n)`` when this is process ``i`` of ``n`` sending to the
    endpoint, as a batch's workers are) except when the server refuses requests (429/503):
    fewer would leave a slot idle while answers wait to be sent, and a queue or a request
    outliving its timeout there means slow decoding, which fewer requests do not speed up;
    more would only wait in the server's queue, their wait counting toward
    ``LLMConfig.max_wait_s``.

    It also keeps what a watchdog needs to tell a busy endpoint from a stuck one: when the
    endpoint last answered (:attr:`last_answer_at`) and its slowest recent answer
    (:attr:`slowest_recent_s`). ``async with`` holds a slot and reports no outcome.
    """

    def __init__(
        self,
        ceiling: int,
        *,
        name: str = "",
        initial: int | None = None,
        part: tuple[int, int] = (0, 1),
    ) -> None:
        if ceiling < 1:
            raise ValueError(f"concurrency limit must be at least 1, got {ceiling}")
        if not 0 <= part[0] < part[1]:
            raise ValueError(f"part must be (i, n) with 0 <= i < n, got {part}")
        self.part = part
        self.ceiling = ceiling
        self.limit = ceiling if initial is None else max(1, min(initial, ceiling))
        self.name = name
        self.epoch = 0
        self.last_answer_at: float | None = None
        """``time.monotonic()`` of the endpoint's last answer (None before the first)."""
        self.answered_sent_at = float("-inf")
        """``time.monotonic()`` when the latest-sent request the endpoint answered was
        sent: a request sent before it and still waiting was overtaken (see
        :mod:`~sotopia_are.llm.watchdog`)."""
        self.slots: int | None = None
        """This process's part of the requests the server decodes at once, once it said
        (None: unknown)."""
        self.server_slots: int | None = None
        """The requests the server decodes at once, all processes' together, once it said
        (None: unknown). With more than one it answers out of order: a short answer
        overtakes a long one decoded beside it."""
        self._held = 0
        self._successes = 0
        self._slow_start = self.limit < ceiling
        self._slowdown: float | None = None  # recent latency / service time (servers reporting it)
        self._latency: float | None = None  # recent latency (servers that do not)
        self._floor: float | None = None  # the running floor of recent latency
        self._recent: collections.deque[float] = collections.deque(maxlen=_RECENT)
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    @property
    def held(self) -> int:
        """Slots held now."""
        return self._held

    @property
    def slowest_recent_s(self) -> float:
        """The longest of the endpoint's recent answers, in seconds (0 before the first)."""
        return max(self._recent, default=0.0)

    def locked(self) -> bool:
        """Whether an :meth:`acquire` would wait."""
        return self._held >= self.limit or bool(self._waiters)

    def take(self) -> int | None:
        """A free slot at once (the epoch to hand back to :meth:`release`), if no one waits
        for one; else None. What :meth:`acquire` does without a coroutine, when it would
        not wait."""
        if self._held < self.limit and not self._waiters:
            self._held += 1
            return self.epoch
        return None

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
            elif waiter in self._waiters:  # a release may have dropped it, cancelled, already
                self._waiters.remove(waiter)
            raise
        return self.epoch

    def serve_at_once(self, slots: int) -> None:
        """The server decodes ``slots`` requests at once: exactly this process's part of
        them in flight from now (up to the ceiling), unless it refuses requests (see the
        class)."""
        if slots < 1:
            return
        self.server_slots = slots
        self.slots = part_of_slots(slots, *self.part)
        fixed = self._floor_limit()
        self._slow_start = False
        if self.limit != fixed:
            _log.debug(
                "%s decodes %d requests at once: at most %d in flight from now (was %d)",
                self.name or "the endpoint",
                slots,
                fixed,
                self.limit,
            )
            self._set(fixed)
            self._successes = 0
            self._wake()

    def _floor_limit(self) -> int:
        """The lowest limit latency or timeouts may bring it to: this process's part of the
        server's slots."""
        return 1 if self.slots is None else min(self.slots, self.ceiling)

    def _top(self) -> int:
        """The highest limit flat latency may bring it to: the ceiling, or this process's
        part of the server's slots once it said."""
        return self.ceiling if self.slots is None else min(self.slots, self.ceiling)

    def answered(self, sent_at: float | None = None) -> None:
        """Note that the endpoint answered a request just now (any answer, even an error),
        one sent at ``sent_at`` (``time.monotonic()``; None: a probe, or not known)."""
        self.last_answer_at = time.monotonic()
        if sent_at is not None and sent_at > self.answered_sent_at:
            self.answered_sent_at = sent_at

    def release(
        self,
        epoch: int | None = None,
        *,
        ok: bool = False,
        throttled: bool = False,
        latency_s: float | None = None,
        service_s: float | None = None,
        lag_s: float = 0.0,
    ) -> None:
        """Give a slot back, with its request's outcome (see the class): ``ok`` with the
        answer's ``latency_s``, the ``service_s`` the server reported for it, if any, and
        the ``lag_s`` of our own event loop while it was out (:meth:`LoopLag.stop`)."""
        self._held -= 1
        if throttled:
            self._lower(epoch, "asks for fewer requests", floor=1)
        elif ok:
            if latency_s is not None:
                # The watchdog waits on what a request really took, our lag included.
                self._recent.append(latency_s)
            # In the slow start every answer counts, as growth only reads that none waited
            # long: an earlier epoch's answers measured less load, never more.
            if epoch is None or epoch == self.epoch or self._slow_start:
                if latency_s is not None:
                    self._observe(latency_s, service_s, lag_s)
                self._successes += 1
                if self._successes >= self.limit:
                    self._successes = 0
                    self._reconsider()
        self._wake()

    def overloaded(self, epoch: int | None) -> None:
        """A request is still waiting past its timeout while the endpoint answers others:
        halve the limit (once per epoch; not below the server's slots)."""
        self._lower(epoch, "is overloaded", floor=self._floor_limit())

    def _observe(self, latency_s: float, service_s: float | None, lag_s: float) -> None:
        if service_s is not None and service_s > 0:
            sample = latency_s / service_s
            last = self._slowdown
            self._slowdown = sample if last is None else last + _FAST * (sample - last)
            return
        if self._floor is not None:
            # Our loop running late delays every answer we read, however idle the server:
            # only the rest is the server's. A stall of the loop while the server was
            # working took nothing from the server's time, so the lag explains an answer
            # down to the floor, not below it. (The first answer is taken whole.)
            latency_s = max(latency_s - lag_s, min(self._floor, latency_s))
        last = self._latency
        self._latency = latency_s if last is None else last + _FAST * (latency_s - last)
        if self._floor is None or self._latency < self._floor:
            self._floor = self._latency  # falls at once; rises a little each round

    def _load(self) -> float | None:
        """How loaded the endpoint looks, scaled so that 1 is "not at all" and the
        thresholds are :data:`_GROW_BELOW` and :data:`_SHRINK_ABOVE` (None: no sign yet)."""
        if self._slowdown is not None:
            return self._slowdown
        if self._latency is None or not self._floor:
            return None
        # Latency without a service time mixes short and long requests: a wider band.
        return 1.0 + (self._latency / self._floor - 1.0) * _UNTIMED_SCALE

    def _reconsider(self) -> None:
        load = self._load()
        if self._floor is not None and self._latency is not None:
            # The latency the endpoint gives when it is not loaded drifts (prompts grow
            # longer as conversations go on): the floor follows, a round at a time.
            self._floor += _SLOW * max(0.0, self._latency - self._floor)
        # Slow start doubles until a sign of overload, not until the first sign of load:
        # the first answers set a floor no loaded state comes back to.
        growing = load is None or load < (_SHRINK_ABOVE if self._slow_start else _GROW_BELOW)
        if growing:
            if self.limit < self._top():
                grown = min(self._top(), self.limit * 2 if self._slow_start else self.limit + 1)
                _log.debug(
                    "%s answers as fast under load (x%s): at most %d in flight from now (was %d)",
                    self.name or "the endpoint",
                    "?" if load is None else f"{load:.1f}",
                    grown,
                    self.limit,
                )
                self._set(grown)
        elif load is not None and load > _SHRINK_ABOVE:
            self._slow_start = False
            lowered = max(self._floor_limit(), self.limit * 3 // 4)
            if lowered < self.limit:
                _log.info(
                    "%s answers slower under load (x%.1f): at most %d in flight from now (was %d)",
                    self.name or "the endpoint",
                    load,
                    lowered,
                    self.limit,
                )
                self._set(lowered)

    def _lower(self, epoch: int | None, why: str, *, floor: int) -> None:
        self._successes = 0
        self._slow_start = False
        if epoch is not None and epoch != self.epoch:
            return  # sent before the limit last changed: that change answered it
        lowered = max(floor, self.limit // 2)
        if lowered < self.limit:
            _log.info(
                "%s %s: at most %d in flight from now (was %d)",
                self.name or "the endpoint",
                why,
                lowered,
                self.limit,
            )
        self._set(min(self.limit, lowered))

    def _set(self, limit: int) -> None:
        """A new limit, and a new epoch: the server's queue time is measured afresh on
        the answers to requests sent under it."""
        self.limit = limit
        self.epoch += 1
        self._slowdown = None

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


class LoopLag:
    """How late one event loop runs its callbacks, added up while requests are out.

    A loop short of CPU (other work in the process, other processes on the cores), or held
    by a callback that does not yield, reads every answer late by as much, however idle
    the server: that lag is ours, not the server's queue. A timer re-armed every
    :data:`_TICK_S` while requests are out measures it: how late each tick ran, plus
    how late the pending one is now. :meth:`start` when a request is sent returns a mark;
    :meth:`stop` with it when the request ends returns our lag in between (at most its
    duration; a stall is missed for up to one tick, the part before the tick fell due).
    One per running loop (:meth:`ConcurrencyRegistry.lag`); not thread-safe.
    """

    def __init__(self) -> None:
        self._late = 0.0  # how late the ticks that ran were, added up
        self._due: float | None = None  # when the pending tick should run (None: no tick)
        self._out = 0  # requests started and not stopped

    def start(self) -> float:
        """A request is sent now (in the running loop): the mark to hand to :meth:`stop`."""
        self._out += 1
        if self._due is None:
            # Not kept: a loop held by its own LoopLag would never be forgotten.
            self._due = time.monotonic() + _TICK_S
            asyncio.get_running_loop().call_later(_TICK_S, self._tick)
        return self._total()

    def stop(self, mark: float) -> float:
        """The request :meth:`start` gave ``mark`` ended now: our lag since, in seconds."""
        self._out -= 1
        return self._total() - mark

    def _total(self) -> float:
        due = self._due
        if due is None:
            return self._late
        return self._late + max(0.0, time.monotonic() - due)

    def _tick(self) -> None:
        now = time.monotonic()
        if self._due is not None:
            self._late += max(0.0, now - self._due)
        if self._out > 0:
            self._due = now + _TICK_S
            asyncio.get_running_loop().call_later(_TICK_S, self._tick)
        else:
            self._due = None  # nothing out: an idle process is not woken 50 times a second


class ConcurrencyRegistry:
    """Limits keyed by (running event loop, endpoint key), and the requests in flight."""

    def __init__(self, *, part: tuple[int, int] = (0, 1)) -> None:
        self.part = part
        """This process is ``part[0]`` of ``part[1]`` sending to the same servers (a
        batch's workers): its limits keep that part of a server's slots in flight."""
        self._lock = threading.Lock()
        self._tickets = itertools.count()
        # Insertion order is start order, so the first entry is always the oldest.
        self._sent: dict[int, float] = {}
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, AdaptiveLimit]
        ] = weakref.WeakKeyDictionary()
        self._lags: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopLag] = (
            weakref.WeakKeyDictionary()
        )
        self.shared: SharedLimit | None = None
        """A limit shared with other processes that every request also holds (None: none)."""

    def limit(self, endpoint: str, ceiling: int, *, initial: int | None = None) -> AdaptiveLimit:
        """This process's limit on ``endpoint``'s requests on the running loop: at most
        ``ceiling``, starting at ``initial`` (default: the ceiling) and adapting to the
        endpoint (:class:`AdaptiveLimit`). A request also holds a slot of :attr:`shared`,
        when set (see :meth:`semaphore`).

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
                found = slots[endpoint] = AdaptiveLimit(
                    ceiling, name=endpoint, initial=initial, part=self.part
                )
        if found.ceiling != ceiling:
            raise ValueError(
                f"endpoint {endpoint} already has a concurrency limit of {found.ceiling} in "
                f"this event loop; asked for {ceiling}. Use one max_concurrency per endpoint."
            )
        return found

    def lag(self) -> LoopLag:
        """The running loop's :class:`LoopLag` (one per loop, made on first use)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            found = self._lags.get(loop)
            if found is None:
                found = self._lags[loop] = LoopLag()
        return found

    def semaphore(self, endpoint: str, limit: int) -> AbstractAsyncContextManager[None]:
        """What one request holds (``async with``): a slot of :meth:`limit`'s
        ``(endpoint, limit)`` and, with :attr:`shared`, one of its slots as well."""
        local = self.limit(endpoint, limit)
        return local if self.shared is None else _SharedGate(local, self.shared, endpoint)

    def sending(self) -> int:
        """Count one request in flight from now; the ticket to hand to :meth:`sent` when
        it ends."""
        # No lock: each step (the count's next, the dict's store, below its delete) is one
        # operation under the GIL, and in_flight reads the dict by such operations too.
        ticket = next(self._tickets)
        self._sent[ticket] = time.monotonic()
        return ticket

    def sent(self, ticket: int) -> None:
        """The request :meth:`sending` gave ``ticket`` is no longer in flight."""
        del self._sent[ticket]

    def in_flight(self) -> InFlight:
        """The requests in flight in this process now, and what its limits allow (safe from
        any thread)."""
        with self._lock:
            count = len(self._sent)
            # One call over the values (the oldest start is the least): another thread's
            # sending or sent may come between two calls, never inside one.
            first = min(self._sent.values(), default=None)
            limit = sum(
                found.limit
                for slots in list(self._by_loop.values())
                for found in slots.values()
                if found.held
            )
        return InFlight(count, 0.0 if first is None else time.monotonic() - first, limit)


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
