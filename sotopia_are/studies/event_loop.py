"""The event loop a batch worker plays its episodes on: uvloop where it is installed (a
dependency on Linux and macOS), else asyncio's own.

uvloop's loop and transports are compiled, with asyncio's semantics (tasks, cancellation,
timers): the share of a model call's CPU a worker spends in its event loop and socket
calls drops (docs/benchmarks.md has the figures). The verbs that play one episode keep
``asyncio.run``: there the loop's cost is nothing next to the model's. Setting
:data:`EVENT_LOOP_ENV` to ``asyncio`` picks asyncio's loop anyway (to compare the two, or
to rule uvloop out when debugging).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["EVENT_LOOP_ENV", "loop_factory", "run_async"]

T = TypeVar("T")

EVENT_LOOP_ENV = "SOTOPIA_ARE_EVENT_LOOP"
"""``uvloop`` (the default, when it is installed) or ``asyncio``."""


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """What makes the verbs' event loops: uvloop's, unless :data:`EVENT_LOOP_ENV` asks for
    asyncio's or uvloop is not installed (None: asyncio's default)."""
    chosen = os.environ.get(EVENT_LOOP_ENV, "uvloop").strip().lower()
    if chosen == "asyncio":
        return None
    if chosen != "uvloop":
        raise ValueError(f"{EVENT_LOOP_ENV} must be 'uvloop' or 'asyncio', not {chosen!r}")
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to completion on a new event loop (see :func:`loop_factory`), as
    :func:`asyncio.run` does: what is left running is cancelled and the loop closed.
    Raises ``RuntimeError`` when called from a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:  # refused before a loop is made: one made and closed here would warn
        raise RuntimeError("run_async() cannot be called from a running event loop")
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
