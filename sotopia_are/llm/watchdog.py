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
from sotopia_are.llm.http_transport import Timeout
from sotopia_are.llm.request import LLMResponse

__all__ = ["PROBE_TIMEOUT_S", "STRETCH", "Waited", "await_answer"]

STRETCH = 3.0
"""An endpoint is stuck after answering nothing for this many times its slowest recent
answer (or ``timeout_s``, whichever is longer)."""

PROBE_TIMEOUT_S = 5.0
"""How long a ``GET /models`` probe of a quiet endpoint may take to count as an answer."""

_PROBES: weakref.WeakKeyDictionary[AdaptiveLimit, asyncio.Task[bool]] = weakref.WeakKeyDictionary()


class Waited:
    """What became of one request's wait: whether it outlived its timeout while the
    endpoint answered others (``overloaded``)."""

    __slots__ = ("overloaded",)

    def __init__(self) -> None:
        self.overloaded = False


async def await_answer(
    sending: Awaitable[LLMResponse],
    *,
    limit: AdaptiveLimit,
    epoch: int,
    endpoint: Endpoint,
    timeout_s: float,
    waited: Waited,
) -> LLMResponse:
    """The answer ``sending`` gives, waited for as the module says; a :class:`Timeout`
    (and ``sending`` cancelled) once the endpoint is stuck."""
    task = asyncio.ensure_future(sending)
    sent = time.monotonic()
    check_at = sent + timeout_s
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=max(0.0, check_at - time.monotonic()))
            if done:
                return task.result()
            stuck_after = max(timeout_s, STRETCH * limit.slowest_recent_s)
            now = time.monotonic()
            heard = limit.last_answer_at
            if heard is None or now - heard >= timeout_s:
                quiet_since = sent if heard is None else max(sent, heard)
                if now - quiet_since < stuck_after:
                    check_at = quiet_since + stuck_after  # slow answers are its habit
                    continue
                if not await _probe(limit, endpoint, timeout_s):
                    raise Timeout(
                        f"the endpoint {_where(endpoint)} answered nothing for "
                        f"{now - quiet_since:.1f} s while this request waited (stuck after "
                        f"{stuck_after:.1f} s: LLMConfig.timeout_s, or {STRETCH:g} x its "
                        f"slowest recent answer)"
                    )
            # The endpoint answers, just not this request yet: it is busy.
            if not waited.overloaded:
                waited.overloaded = True
                limit.overloaded(epoch)
            check_at = time.monotonic() + timeout_s
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


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
            client.get(url) as response,
        ):
            await response.read()
            return True
    except (aiohttp.ClientError, OSError, TimeoutError, ValueError):
        return False


def _where(endpoint: Endpoint) -> str:
    return endpoint.api_base or f"of {endpoint.model}"
