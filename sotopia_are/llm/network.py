"""Sending a session's request over the network: a slot of the endpoint's limit, the
watchdog, retries, and every failed request kept as an attempt.

What :class:`~sotopia_are.llm.session.LLMSession` does for a request no replay or cache
answers; :func:`as_llm_error` is the typed error a call raises when it gives up.
"""

from __future__ import annotations

import asyncio
import time

from sotopia_are.llm.accounting import Attempt, AttemptError
from sotopia_are.llm.concurrency import ConcurrencyRegistry
from sotopia_are.llm.config import REQUEST_ATTEMPTS_ENV, Endpoint, LLMConfig
from sotopia_are.llm.errors import LLMError, MalformedReplyError, TransientLLMError
from sotopia_are.llm.failures import (
    describe,
    is_provider_error,
    is_rate_limited,
    is_transient,
    permanent_error,
)
from sotopia_are.llm.request import LLMRequest, LLMResponse, Message
from sotopia_are.llm.server_slots import learning_slots
from sotopia_are.llm.transport import Sender
from sotopia_are.llm.watchdog import Watchdog

__all__ = ["as_llm_error", "describe_endpoint", "send_with_retries"]


async def send_with_retries(
    request: LLMRequest,
    endpoint: Endpoint,
    config: LLMConfig,
    concurrency: ConcurrencyRegistry,
    attempts: list[Attempt],
    added: list[Message],
) -> tuple[LLMResponse, float, float]:
    """Send ``request`` to ``endpoint`` with ``config``'s retries and limits (kept in
    ``concurrency``); return the response, when its successful request was sent and how
    long it waited for a slot first. Each failed request is appended to ``attempts``, the
    first of them with the messages ``added`` since the call's previous request.

    Each request holds a slot of the endpoint's limit in this process (and of the
    shared limit, when one is set) while it is sent; backoff sleeps hold none. Latency
    growing with load (less our own event loop's lag while it was out, see
    :class:`~sotopia_are.llm.concurrency.LoopLag`), a 429 (or 503), or a request
    outliving its timeout while the endpoint answers others lower the limit; flat latency
    raises it (see :class:`~sotopia_are.llm.concurrency.AdaptiveLimit`). Its timeout
    starts when it is sent and ends it only when the endpoint is stuck (see
    :mod:`~sotopia_are.llm.watchdog`)."""
    line = _line(endpoint, config, concurrency)
    first = len(attempts)
    started = time.monotonic()
    try:
        return await _once(line, request, attempts, added, first)
    except Exception as exc:
        if not is_transient(exc):
            raise
        failed = exc
    # Loaded on the first transient failure: tenacity is 20 M instructions of a batch
    # driver's start, and most batches never retry.
    from sotopia_are.llm.retry import retrying

    return await retrying(
        config.retry,
        lambda: _once(line, request, attempts, added, first),
        target=line.target,
        timeout_s=config.timeout_s,
        failed=failed,
        started=started,
    )


class _Line:
    """What every request to one endpoint from one event loop, under one config and
    registry, shares: made on the first (see :func:`_line`), not per request."""

    __slots__ = (
        "concurrency",
        "config",
        "endpoint",
        "lag",
        "learned",
        "limit",
        "loop",
        "sender",
        "target",
        "watchdog",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        endpoint: Endpoint,
        config: LLMConfig,
        concurrency: ConcurrencyRegistry,
    ) -> None:
        self.loop, self.endpoint = loop, endpoint
        self.config, self.concurrency = config, concurrency
        self.limit = concurrency.limit(
            endpoint.key, config.concurrency_for(endpoint), initial=config.initial_concurrency
        )
        self.lag = concurrency.lag()
        self.target = describe_endpoint(endpoint)
        # The transport's own bound only bounds one request's whole wait; the watchdog
        # tells a busy endpoint from a stuck one after timeout_s (see llm/watchdog.py),
        # and bounds the wait itself when the transport does not.
        self.sender = Sender(endpoint, max(config.timeout_s, config.max_wait_s))
        self.watchdog = Watchdog(
            self.limit,
            endpoint,
            config.timeout_s,
            deadline_s=None if self.sender.bounded else self.sender.timeout_s,
            expired=None if self.sender.bounded else self.sender.timed_out,
        )
        self.learned = False  # whether the server's decoding slots were asked for


_LINES: dict[tuple[int, int, int, int], _Line] = {}
_MAX_LINES = 64


def _line(endpoint: Endpoint, config: LLMConfig, concurrency: ConcurrencyRegistry) -> _Line:
    """The running loop's :class:`_Line` to ``endpoint`` under ``config`` and
    ``concurrency``. Kept by their identities, each checked (an id may be reused once its
    object is gone); a process has a few, and the oldest are dropped past
    :data:`_MAX_LINES` (tests make many loops and configs)."""
    loop = asyncio.get_running_loop()
    key = (id(loop), id(endpoint), id(config), id(concurrency))
    line = _LINES.get(key)
    if (
        line is None
        or line.loop is not loop
        or line.endpoint is not endpoint
        or line.config is not config
        or line.concurrency is not concurrency
    ):
        line = _Line(loop, endpoint, config, concurrency)
        if len(_LINES) >= _MAX_LINES:
            del _LINES[next(iter(_LINES))]
        _LINES[key] = line
    return line


async def _once(
    line: _Line, request: LLMRequest, attempts: list[Attempt], added: list[Message], first: int
) -> tuple[LLMResponse, float, float]:
    """One request of :func:`send_with_retries`: the response, when it was sent and how
    long it waited for a slot."""
    asked = time.perf_counter()
    limit = line.limit
    if not line.learned:
        learning = learning_slots(limit, line.endpoint)
        if learning is None:
            line.learned = True
        else:  # the first requests: how many the server decodes at once
            await asyncio.shield(learning)
    epoch = limit.take()
    if epoch is None:
        epoch = await limit.acquire()
    answer: LLMResponse | None = None
    throttled = False
    mark: float | None = None
    began = asked
    queued = 0.0
    shared = line.concurrency.shared
    try:
        if shared is not None:
            await shared.acquire(line.endpoint.key)
        began = time.perf_counter()
        queued = began - asked
        mark = line.lag.start()
        try:
            ticket = line.concurrency.sending()
            watch = line.watchdog.watch(epoch)
            try:
                response = await line.sender.send(request)
            except asyncio.CancelledError:
                ended = watch.ended
                if ended is not None and watch.task.uncancel() == 0:
                    raise ended from None  # the watch's timeout, not a cancel from outside
                raise
            finally:
                watch.stop()
                line.concurrency.sent(ticket)
            limit.answered(watch.sent)
            answer = response
            return response, began, queued
        except Exception as exc:
            throttled = is_rate_limited(exc)
            if _is_answer(exc):
                limit.answered()
            attempts.append(
                Attempt(
                    number=len(attempts) + 1,
                    added_messages=added if len(attempts) == first else [],
                    latency_s=time.perf_counter() - began,
                    queued_s=queued,
                    error=describe(exc),
                    error_kind=_error_kind(exc),
                )
            )
            raise
        finally:
            if shared is not None:
                await shared.release(line.endpoint.key)
    finally:
        lag_s = 0.0 if mark is None else line.lag.stop(mark)
        limit.release(
            epoch,
            ok=answer is not None,
            throttled=throttled,
            latency_s=None if answer is None else time.perf_counter() - began,
            service_s=None if answer is None else answer.service_s,
            lag_s=lag_s,
        )


def as_llm_error(exc: Exception, endpoint: Endpoint, requests: int) -> LLMError | None:
    """The typed error to raise for ``exc`` (None: an unexpected error, re-raised)."""
    if isinstance(exc, LLMError):
        return exc
    if is_transient(exc):
        return TransientLLMError(
            f"{describe_endpoint(endpoint)} still failing after {requests} requests: "
            f"{describe(exc)}; check that the server is up (api_base), lower "
            f"LLMConfig.max_concurrency, or raise LLMConfig.retry.max_attempts (the "
            f"CLI's --request-attempts or {REQUEST_ATTEMPTS_ENV})."
        )
    if is_provider_error(exc):
        return permanent_error(exc, endpoint.model, endpoint.api_base)
    return None


def describe_endpoint(endpoint: Endpoint) -> str:
    """How errors and logs name ``endpoint``: its model, and its ``api_base`` if any."""
    where = f" at {endpoint.api_base}" if endpoint.api_base else ""
    return f"model {endpoint.model!r}{where}"


def _is_answer(exc: BaseException) -> bool:
    """Whether ``exc`` carries an answer of the endpoint (an error status, a malformed
    body): the endpoint is alive, whatever it said."""
    if isinstance(exc, MalformedReplyError):
        return True
    status = getattr(exc, "status_code", None) or getattr(exc, "status", None)
    return isinstance(status, int)


def _error_kind(exc: BaseException) -> AttemptError:
    if is_transient(exc):
        return "transient"
    return "permanent" if is_provider_error(exc) else "unexpected"
