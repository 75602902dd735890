"""Bounded concurrency per model endpoint, shared by everything in the process.

asyncio primitives belong to one event loop, and tests (or threads) run many loops, so
the registry keeps one semaphore per (event loop, endpoint). Loops are held weakly: a
closed and forgotten loop takes its semaphores with it. This registry is the one piece
of process-wide mutable state in the LLM layer, by design: many episodes running at once
must share one limit per endpoint.
"""

from __future__ import annotations

import asyncio
import threading
import weakref

__all__ = ["CONCURRENCY", "ConcurrencyRegistry"]


class ConcurrencyRegistry:
    """Semaphores keyed by (running event loop, endpoint key)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, tuple[int, asyncio.Semaphore]]
        ] = weakref.WeakKeyDictionary()

    def semaphore(self, endpoint: str, limit: int) -> asyncio.Semaphore:
        """The semaphore bounding ``endpoint`` to ``limit`` requests on the running loop.

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
        return semaphore


CONCURRENCY = ConcurrencyRegistry()
"""The process-wide registry every :class:`~sotopia_are.llm.session.LLMSession` uses."""
