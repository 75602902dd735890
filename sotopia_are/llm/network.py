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
from sotopia_are.llm.retry import retrying
from sotopia_are.llm.server_slots import learning_slots
from sotopia_are.llm.transport import send
from sotopia_are.llm.watchdog import await_answer

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
    limit = concurrency.limit(
        endpoint.key, config.concurrency_for(endpoint), initial=config.initial_concurrency
    )
    shared = concurrency.shared
    lag = concurrency.lag()
    began = [0.0]
    queued = [0.0]
    first = len(attempts)
    # The transport's own timeout only bounds one request's whole wait; the watchdog
    # tells a busy endpoint from a stuck one after timeout_s (see llm/watchdog.py).
    transport_timeout = max(config.timeout_s, config.max_wait_s)

    async def once() -> LLMResponse:
        asked = time.perf_counter()
        learning = learning_slots(limit, endpoint)
        if learning is not None:  # the first requests: how many the server decodes at once
            await asyncio.shield(learning)
        epoch = await limit.acquire()
        answer: LLMResponse | None = None
        throttled = False
        mark: float | None = None
        try:
            if shared is not None:
                await shared.acquire(endpoint.key)
            began[0] = time.perf_counter()
            queued[0] = began[0] - asked
            mark = lag.start()
            try:
                with concurrency.sending():
                    response = await await_answer(
                        send(request, endpoint, transport_timeout),
                        limit=limit,
                        epoch=epoch,
                        endpoint=endpoint,
                        timeout_s=config.timeout_s,
                    )
                limit.answered()
                answer = response
                return response
            except Exception as exc:
                throttled = is_rate_limited(exc)
                if _is_answer(exc):
                    limit.answered()
                attempts.append(
                    Attempt(
                        number=len(attempts) + 1,
                        added_messages=added if len(attempts) == first else [],
                        latency_s=time.perf_counter() - began[0],
                        queued_s=queued[0],
                        error=describe(exc),
                        error_kind=_error_kind(exc),
                    )
                )
                raise
            finally:
                if shared is not None:
                    await shared.release(endpoint.key)
        finally:
            lag_s = 0.0 if mark is None else lag.stop(mark)
            limit.release(
                epoch,
                ok=answer is not None,
                throttled=throttled,
                latency_s=None if answer is None else time.perf_counter() - began[0],
                service_s=None if answer is None else answer.service_s,
                lag_s=lag_s,
            )

    response = await retrying(
        config.retry,
        once,
        target=describe_endpoint(endpoint),
        timeout_s=config.timeout_s,
    )
    return response, began[0], queued[0]


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
