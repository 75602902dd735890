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

A busy endpoint's request is waited for as one queued behind the requests sent before it.
A request the endpoint has **overtaken** (it answered a request sent after this one) that
has waited its timeout, stretched as above, is taken as lost instead (a server that
dropped it, or sent half its answer and hung): it fails as a dropped connection
(:class:`~sotopia_are.llm.http_errors.APIConnectionError`, its connection closed), which
the retry policy retries under ``RetryPolicy.max_attempts``. A lost request that no later
one overtook (the last one sent) is still waited for as a busy endpoint's, up to
``LLMConfig.max_wait_s``. So is every request to a server that said it decodes several
requests at once (llama.cpp's ``total_slots`` above 1): such a server answers out of
order by design (a short answer decoded beside a long one comes first), so a request it
overtook may be one still decoding — failing and sending it again would throw that
decoding away.

Lowering the limit stops at the server's decoding slots when it says how many
(:mod:`~sotopia_are.llm.server_slots`, asked on an endpoint's first request): there a
request outliving its timeout means slow decoding, not a queue fewer requests would cut.

``LLMConfig.max_wait_s`` bounds one request's wait whatever the endpoint does (litellm's
own timeout, or the watchdog's deadline over the HTTP transport, which keeps no timer per
request of its own): a server that answers its model list but never a chat request is
reported then.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from typing import Any

from sotopia_are.llm.concurrency import AdaptiveLimit
from sotopia_are.llm.config import Endpoint
from sotopia_are.llm.http_errors import APIConnectionError, Timeout
from sotopia_are.llm.http_pools import get_once

__all__ = ["PROBE_TIMEOUT_S", "STRETCH", "Watch", "Watchdog"]

STRETCH = 3.0
"""An endpoint is stuck after answering nothing for this many times its slowest recent
answer (or ``timeout_s``, whichever is longer)."""

PROBE_TIMEOUT_S = 5.0
"""How long a ``GET /models`` probe of a quiet endpoint may take to count as an answer."""

_PROBE_BODY_CAP = 64 * 1024
"""A probe reads at most this much of the listing (past it, the body is dropped)."""

_PROBES: weakref.WeakKeyDictionary[AdaptiveLimit, asyncio.Task[bool]] = weakref.WeakKeyDictionary()


class Watchdog:
    """The watch over the requests one event loop sends to one endpoint with one
    ``timeout_s``, as the module says: :meth:`watch` each request when it is sent and
    stop its :class:`Watch` when it ends.

    Most requests are answered well within their timeout, so they share one timer: it
    fires when the oldest request waiting reaches its timeout (requests are watched in the
    order they are sent, each for as long), and only a request that outlives its timeout
    gets timers of its own. (A timer per request cost more than the rest of the watch: a
    timer and its cancelling push and pop the loop's heap, in Python, twice.)

    ``deadline_s`` (None: none) bounds one request's wait whatever the endpoint does, for
    a transport that does not bound its own: past it the request is cancelled and
    :meth:`Watch.ended` is ``expired()``, the transport's own timeout error.
    """

    def __init__(
        self,
        limit: AdaptiveLimit,
        endpoint: Endpoint,
        timeout_s: float,
        *,
        deadline_s: float | None = None,
        expired: Callable[[], Exception] | None = None,
    ) -> None:
        if deadline_s is not None and expired is None:
            raise ValueError("a deadline needs the error to raise past it")
        self.limit, self.endpoint, self.timeout_s = limit, endpoint, timeout_s
        self.deadline_s, self.expired = deadline_s, expired
        self.loop = asyncio.get_running_loop()
        self._waiting: dict[Watch, None] = {}  # in the order they were sent
        self._timer: asyncio.TimerHandle | None = None

    def watch(self, epoch: int) -> Watch:
        """Watch the running task's request, sent now under the limit's ``epoch``."""
        task = asyncio.current_task(self.loop)
        assert task is not None, "a request is watched in a task"
        watch = Watch(self, task, epoch)
        self._waiting[watch] = None
        if self._timer is None:
            self._timer = self.loop.call_later(self.timeout_s, self._sweep)
        return watch

    def _sweep(self) -> None:
        """Check every request that has waited ``timeout_s``; the timer is set again for
        the oldest of the others."""
        self._timer = None
        now = time.monotonic()
        waiting = self._waiting
        while waiting:
            watch = next(iter(waiting))
            left = watch.sent + self.timeout_s - now
            if left > _EARLY_S:
                self._timer = self.loop.call_later(left, self._sweep)
                return
            del waiting[watch]
            watch.check()


_EARLY_S = 0.001
"""A timer may run this early (the loop's clock resolution): what is due within it is due."""


class Watch:
    """One waiting request of a :class:`Watchdog`. Once it outlived its timeout, the
    endpoint is busy (the limit is lowered, its timer set again) or stuck, or it overtook
    the request, which is lost (then the request's task is cancelled, with :attr:`ended`
    saying why)."""

    __slots__ = (
        "_deadline",
        "deciding",
        "ended",
        "epoch",
        "overloaded",
        "sent",
        "task",
        "timer",
        "watchdog",
    )

    def __init__(self, watchdog: Watchdog, task: asyncio.Task[Any], epoch: int) -> None:
        self.watchdog, self.task, self.epoch = watchdog, task, epoch
        self.sent = time.monotonic()
        self.overloaded = False  # the limit was lowered for this request already
        self.ended: Exception | None = None
        """Why the request's task was cancelled: a :class:`Timeout` marked ``stuck``, an
        ``APIConnectionError`` for a lost request, or the deadline's error (None: not by
        the watch)."""
        self.timer: asyncio.TimerHandle | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self.deciding: asyncio.Task[None] | None = None

    def stop(self) -> None:
        """The request ended: stop watching it."""
        watchdog = self.watchdog
        if watchdog._waiting.pop(self, 0) is None:  # waiting still: no timer of its own
            return
        if self.timer is not None:
            self.timer.cancel()
        if self._deadline is not None:
            self._deadline.cancel()
        if self.deciding is not None and not self.deciding.done():
            self.deciding.cancel()

    def check(self) -> None:
        watchdog = self.watchdog
        limit, timeout_s = watchdog.limit, watchdog.timeout_s
        stuck_after = max(timeout_s, STRETCH * limit.slowest_recent_s)
        now = time.monotonic()
        deadline_s = watchdog.deadline_s
        if deadline_s is not None and self._deadline is None:
            # The deadline is set once the request outlived its timeout: at that point, or
            # later (another check of the same round may lower the limit first).
            self._deadline = watchdog.loop.call_later(
                max(0.0, self.sent + deadline_s - now), self.expire
            )
        # A server decoding several requests at once answers a short one sent later
        # before a long one: there being overtaken is no sign of a lost request.
        in_order = (limit.server_slots or 1) == 1
        overtaken = in_order and limit.answered_sent_at > self.sent
        if overtaken and now - self.sent >= stuck_after - _EARLY_S:
            self.lost(now - self.sent, stuck_after)
            return
        heard = limit.last_answer_at
        if heard is None or now - heard >= timeout_s:
            quiet_since = self.sent if heard is None else max(self.sent, heard)
            if now - quiet_since < stuck_after:  # slow answers are its habit
                self.timer = watchdog.loop.call_later(quiet_since + stuck_after - now, self.check)
            else:
                self.deciding = watchdog.loop.create_task(
                    self.probe(now - quiet_since, stuck_after)
                )
            return
        self.busy()

    def busy(self) -> None:
        """The endpoint answers, just not this request yet."""
        if not self.overloaded:
            self.overloaded = True
            self.watchdog.limit.overloaded(self.epoch)
        self.timer = self.watchdog.loop.call_later(self.watchdog.timeout_s, self.check)

    def lost(self, waited_s: float, stuck_after: float) -> None:
        """The endpoint answered requests sent after this one, which has waited longer
        than any of its recent answers took: the server lost it (a server answering in
        order would have answered it first). The request fails as a dropped connection,
        retried under ``RetryPolicy.max_attempts``; cancelling it closes its connection."""
        self.ended = APIConnectionError(
            f"the endpoint {_where(self.watchdog.endpoint)} answered requests sent after "
            f"this one, which got no answer in {waited_s:.1f} s (lost after "
            f"{stuck_after:.1f} s: LLMConfig.timeout_s, or {STRETCH:g} x its slowest "
            "recent answer); its connection is dropped"
        )
        self.task.cancel()

    def expire(self) -> None:
        """The request waited its deadline: it ends with the transport's timeout."""
        if self.ended is None:
            assert self.watchdog.expired is not None
            self.ended = self.watchdog.expired()
            self.task.cancel()

    async def probe(self, quiet_s: float, stuck_after: float) -> None:
        watchdog = self.watchdog
        if await _probe(watchdog.limit, watchdog.endpoint, watchdog.timeout_s):
            self.busy()
            return
        if self.ended is not None:
            return  # its deadline ended it meanwhile
        stuck = Timeout(
            f"the endpoint {_where(watchdog.endpoint)} answered nothing for {quiet_s:.1f} s "
            f"while this request waited (stuck after {stuck_after:.1f} s: "
            f"LLMConfig.timeout_s, or {STRETCH:g} x its slowest recent answer)"
        )
        stuck.stuck = True
        self.ended = stuck
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
    """Whether ``GET {api_base}/models`` answers (any status) within ``timeout_s``."""
    url = api_base.rstrip("/") + "/models"
    try:
        # Its status line is the answer; the listing itself is not needed.
        await get_once(url, {}, _PROBE_BODY_CAP, timeout_s)
    except (OSError, TimeoutError, ValueError):
        return False
    return True


def _where(endpoint: Endpoint) -> str:
    return endpoint.api_base or f"of {endpoint.model}"
