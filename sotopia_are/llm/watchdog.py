"""Waiting for an answer: a busy endpoint is waited for, a silent one is reported.

A request's timeout (``LLMConfig.timeout_s``) starts when it is sent, never while it waits
for a slot of the endpoint's limit in this process. When it has waited that long, the
endpoint is asked whether it is busy or stuck:

* it answered something in the last ``timeout_s`` — another request, or a ``GET /models``
  probe at its ``api_base`` — so it is **busy**: the request is overload, the endpoint's
  limit is lowered, and the request keeps waiting. It keeps its place in the server's
  queue: local servers (llama.cpp, Ollama, vLLM) queue requests rather than refuse them,
  and a request sent again would wait at the back of that queue;
* it answered nothing for ``timeout_s`` (stretched to :data:`STRETCH` times its slowest
  recent answer, so that a server whose every answer takes minutes is not called stuck
  between two of them), so it is **stuck**: the request times out, which the retry policy
  counts toward ``RetryPolicy.max_timeouts``.

Lowering the limit stops at the server's decoding slots when it says how many
(:mod:`~sotopia_are.llm.server_slots`, asked on an endpoint's first request): there a
request outliving its timeout means slow decoding, not a queue fewer requests would cut.

``LLMConfig.max_wait_s`` bounds one request's wait whatever the endpoint does (the
transport's own timeout): a server that answers its model list but never a chat request is
reported then.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable

from sotopia_are.llm.concurrency import AdaptiveLimit
from sotopia_are.llm.config import Endpoint
from sotopia_are.llm.http_errors import Timeout
from sotopia_are.llm.request import LLMResponse

__all__ = ["PROBE_TIMEOUT_S", "STRETCH", "await_answer"]

STRETCH = 3.0
"""An endpoint is stuck after answering nothing for this many times its slowest recent
answer (or ``timeout_s``, whichever is longer)."""

PROBE_TIMEOUT_S = 5.0
"""How long a ``GET /models`` probe of a quiet endpoint may take to count as an answer."""

_PROBES: weakref.WeakKeyDictionary[AdaptiveLimit, asyncio.Task[bool]] = weakref.WeakKeyDictionary()


async def await_answer(
    sending: Awaitable[LLMResponse],
    *,
    limit: AdaptiveLimit,
    epoch: int,
    endpoint: Endpoint,
    timeout_s: float,
) -> LLMResponse:
    """The answer ``sending`` gives, waited for as the module says; a :class:`Timeout`
    marked ``stuck`` (and ``sending`` cancelled) once the endpoint is stuck.

    Awaited in the calling task with one timer beside it (no task of its own per request:
    this is on every model call's path)."""
    task = asyncio.current_task()
    assert task is not None, "await_answer runs in a task"
    watch = _Watch(task, limit, epoch, endpoint, timeout_s)
    try:
        return await sending
    except asyncio.CancelledError:
        if watch.stuck is not None and task.uncancel() == 0:
            timeout = Timeout(watch.stuck)
            timeout.stuck = True
            raise timeout from None
        raise
    finally:
        watch.stop()


class _Watch:
    """The timer beside one waiting request: when it fires, the endpoint is busy (the
    limit is lowered, the timer set again) or stuck (the request's task is cancelled,
    with :attr:`stuck` saying why)."""

    def __init__(
        self,
        task: asyncio.Task[object],
        limit: AdaptiveLimit,
        epoch: int,
        endpoint: Endpoint,
        timeout_s: float,
    ) -> None:
        self.task, self.limit, self.epoch = task, limit, epoch
        self.endpoint, self.timeout_s = endpoint, timeout_s
        self.overloaded = False  # the limit was lowered for this request already
        self.loop = asyncio.get_running_loop()
        self.sent = time.monotonic()
        self.stuck: str | None = None
        self.deciding: asyncio.Task[None] | None = None
        self.timer = self.loop.call_later(timeout_s, self.check)

    def stop(self) -> None:
        self.timer.cancel()
        if self.deciding is not None and not self.deciding.done():
            self.deciding.cancel()

    def check(self) -> None:
        stuck_after = max(self.timeout_s, STRETCH * self.limit.slowest_recent_s)
        now = time.monotonic()
        heard = self.limit.last_answer_at
        if heard is None or now - heard >= self.timeout_s:
            quiet_since = self.sent if heard is None else max(self.sent, heard)
            if now - quiet_since < stuck_after:  # slow answers are its habit
                self.timer = self.loop.call_later(quiet_since + stuck_after - now, self.check)
            else:
                self.deciding = self.loop.create_task(self.probe(now - quiet_since, stuck_after))
            return
        self.busy()

    def busy(self) -> None:
        """The endpoint answers, just not this request yet."""
        if not self.overloaded:
            self.overloaded = True
            self.limit.overloaded(self.epoch)
        self.timer = self.loop.call_later(self.timeout_s, self.check)

    async def probe(self, quiet_s: float, stuck_after: float) -> None:
        if await _probe(self.limit, self.endpoint, self.timeout_s):
            self.busy()
            return
        self.stuck = (
            f"the endpoint {_where(self.endpoint)} answered nothing for {quiet_s:.1f} s while "
            f"this request waited (stuck after {stuck_after:.1f} s: LLMConfig.timeout_s, or "
            f"{STRETCH:g} x its slowest recent answer)"
        )
        self.task.cancel()


async def _probe(limit: AdaptiveLimit, endpoint: Endpoint, timeout_s: float) -> bool:
    """Whether the endpoint answers ``GET /models`` (any HTTP status) within
    :data:`PROBE_TIMEOUT_S` (or ``timeout_s``, if shorter); the requests of one endpoint
    share one probe at a time."""
    if endpoint.api_base is None:
        return False  # a provider's own endpoint: its answers to requests are the signal
    running = _PROBES.get(limit)
    if running is None or running.done():
        running = _PROBES[limit] = asyncio.ensure_future(
            _get_models(endpoint.api_base, min(PROBE_TIMEOUT_S, timeout_s))
        )
    if not await asyncio.shield(running):
        return False
    limit.answered()
    return True


async def _get_models(api_base: str, timeout_s: float) -> bool:
    import aiohttp

    url = api_base.rstrip("/") + "/models"
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as client,
            client.get(url),
        ):
            return True  # its status line is the answer; the listing itself is not needed
    except (aiohttp.ClientError, OSError, TimeoutError, ValueError):
        return False


def _where(endpoint: Endpoint) -> str:
    return endpoint.api_base or f"of {endpoint.model}"
