"""`SlotPool`: a local model server's decoding slots shared by a batch's worker processes
as they free up.

Each worker has its own limit per endpoint (:class:`~sotopia_are.llm.AdaptiveLimit`); a
fixed part of a server's slots each (``slots // workers``) leaves a worker's part idle
once its own episodes are done or waiting on the store, while another worker has requests
waiting for its own part (measured: one of two slots busy 79 % of the time on llama.cpp;
docs/benchmarks.md, "Decoding slots kept busy"). With the pool, every worker may use every
slot, and a request also holds one of its server's permits in the pool (a semaphore of
the operating system, one per server, as many permits as the server has slots): the
requests in flight to a server stay at its slots, taken by whichever worker has one ready.

A worker that dies (``kill -9``) cannot give its permits back; each worker counts the ones
it holds in shared memory, and the batch's parent gives a dead worker's back
(:meth:`SlotPool.reclaim`), so the others go on with every slot. A worker killed in the
microseconds between taking a permit and counting it (or giving it back and uncounting
it) leaves the pool one permit short (or one over) for the rest of the batch.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from typing import Any

__all__ = ["SlotPool", "WorkerSlots"]

_POLL_S = 0.5
"""How often a thread waiting for a permit looks whether its worker is closing."""


@dataclass(frozen=True)
class SlotPool:
    """The permits of each server the batch calls that says its decoding slots, for
    ``workers`` processes: ``servers`` maps each endpoint key to its server's index in
    ``permits`` (endpoints of one server, e.g. the agents' and the judge's models, share
    its permits); ``held`` counts each worker's permits of each server. Made by the
    parent (:meth:`create`) and handed to each worker process when it starts."""

    servers: Mapping[str, int]
    permits: tuple[Any, ...]  # multiprocessing semaphores
    held: Any  # a multiprocessing Array of int: worker * len(permits) + server
    workers: int

    @classmethod
    def create(
        cls, context: BaseContext, slots: Mapping[str, tuple[str, int]], workers: int
    ) -> SlotPool:
        """A pool for ``workers`` processes started by ``context``; ``slots`` maps each
        endpoint key to its server (any name that is the same for endpoints sharing the
        server's slots) and that server's decoding slots."""
        order = sorted({server for server, _ in slots.values()})
        count = {server: size for server, size in slots.values()}
        return cls(
            servers={key: order.index(server) for key, (server, _) in slots.items()},
            permits=tuple(context.Semaphore(count[server]) for server in order),
            held=context.Array("i", workers * len(order), lock=False),
            workers=workers,
        )

    def reclaim(self, worker: int) -> int:
        """Give back the permits worker ``worker`` held when it died (call it only once
        the process has exited); how many there were."""
        given = 0
        for server, permits in enumerate(self.permits):
            cell = worker * len(self.permits) + server
            for _ in range(self.held[cell]):
                permits.release()
                given += 1
            self.held[cell] = 0
        return given


class WorkerSlots:
    """Worker ``index``'s side of ``pool``: a :class:`~sotopia_are.llm.SharedLimit` whose
    slots are the pool's permits (an endpoint the pool does not know is not bounded).

    A request takes a free permit at once when no earlier one of this worker waits;
    otherwise it waits in line, and a thread per server takes permits for the line as
    they free (a semaphore of the operating system cannot be awaited). :meth:`close`
    stops those threads."""

    def __init__(self, pool: SlotPool, index: int) -> None:
        if not 0 <= index < pool.workers:
            raise ValueError(f"worker index must be in [0, {pool.workers}), got {index}")
        self._pool = pool
        self._cells = [index * len(pool.permits) + s for s in range(len(pool.permits))]
        self._count_lock = threading.Lock()
        self._lines: list[collections.deque[asyncio.Future[None]]] = [
            collections.deque() for _ in pool.permits
        ]
        self._wanted = [threading.Semaphore(0) for _ in pool.permits]
        self._threads: list[threading.Thread | None] = [None for _ in pool.permits]
        self._closing = threading.Event()

    async def acquire(self, endpoint: str) -> None:
        """Wait for a permit of ``endpoint``'s server (at once for an endpoint the pool does
        not know)."""
        server = self._pool.servers.get(endpoint)
        if server is None:
            return
        line = self._lines[server]
        if not line and self._pool.permits[server].acquire(block=False):
            self._count(server, 1)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        line.append(waiter)
        self._start(server)
        self._wanted[server].release()
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._give(server)  # handed a permit, then cancelled before running
            raise

    async def release(self, endpoint: str) -> None:
        """Give back a permit of ``endpoint``'s server."""
        server = self._pool.servers.get(endpoint)
        if server is not None:
            self._give(server)

    def close(self) -> None:
        """Stop waiting for permits (call it once no request of this worker waits)."""
        self._closing.set()
        for wanted in self._wanted:
            wanted.release()
        for thread in self._threads:
            if thread is not None:
                thread.join()

    def _count(self, server: int, change: int) -> None:
        with self._count_lock:
            self._pool.held[self._cells[server]] += change

    def _give(self, server: int) -> None:
        self._pool.permits[server].release()
        self._count(server, -1)

    def _start(self, server: int) -> None:
        if self._threads[server] is None:
            loop = asyncio.get_running_loop()
            thread = threading.Thread(
                target=self._take_for_line,
                args=(server, loop),
                name=f"sotopia-are-slots-{server}",
                daemon=True,
            )
            self._threads[server] = thread
            thread.start()

    def _take_for_line(self, server: int, loop: asyncio.AbstractEventLoop) -> None:
        """For each waiter put in ``server``'s line, take a permit and hand it to the
        first waiter still waiting (on ``loop``)."""
        permits = self._pool.permits[server]
        while True:
            self._wanted[server].acquire()
            while not permits.acquire(timeout=_POLL_S):
                if self._closing.is_set():
                    return
            if self._closing.is_set():
                permits.release()
                return
            self._count(server, 1)
            try:
                loop.call_soon_threadsafe(self._hand_over, server)
            except RuntimeError:  # the loop is closed: nobody is left to take it
                self._give(server)
                return

    def _hand_over(self, server: int) -> None:
        """On the loop: the permit just taken goes to the first waiter not cancelled, else
        back to the pool."""
        line = self._lines[server]
        while line:
            waiter = line.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._give(server)
