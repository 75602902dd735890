"""Retrying transient failures with tenacity: exponential backoff with full jitter, and
the server's ``Retry-After`` honoured when it gives one (see
:class:`~sotopia_are.llm.config.RetryPolicy`). A server asking for a longer wait than the
policy allows fails the request at once: a shortened wait would only burn an attempt on
a request the server already said it would refuse.

Requests that time out have a budget of their own (``RetryPolicy.max_timeouts``): once it
is spent the call fails with a :class:`TransientLLMError` saying how long it waited and
which settings change that, so a server that answers nothing is reported after
``max_timeouts`` timeouts rather than after every attempt. A request times out only when
its endpoint is stuck (see :mod:`~sotopia_are.llm.watchdog`), not while it is busy.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import tenacity

from sotopia_are.llm._litellm import load_litellm
from sotopia_are.llm.config import REQUEST_ATTEMPTS_ENV, TIMEOUT_ENV, RetryPolicy
from sotopia_are.llm.errors import TransientLLMError
from sotopia_are.llm.failures import describe, is_transient, retry_after_seconds
from sotopia_are.llm.http_transport import HTTPTransportError
from sotopia_are.llm.http_transport import Timeout as HTTPTimeout

__all__ = ["BackoffWait", "retrying"]

T = TypeVar("T")


class BackoffWait(tenacity.wait.wait_base):
    """tenacity wait strategy: ``Retry-After`` if the server sent one, else full jitter.

    Raises :class:`TransientLLMError` when the server asks for more than
    ``policy.max_retry_after_s``; ``target`` (e.g. "model 'x' at <url>") names what was
    called in that message.
    """

    def __init__(self, policy: RetryPolicy, target: str = "the model") -> None:
        self.policy = policy
        self.target = target
        self._jitter = tenacity.wait_random_exponential(
            multiplier=policy.initial_backoff_s, max=policy.max_backoff_s
        )

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        asked = retry_after_seconds(exc) if exc is not None else None
        if asked is None:
            return float(self._jitter(retry_state))
        if exc is not None and asked > self.policy.max_retry_after_s:
            raise TransientLLMError(
                f"{self.target} asked to wait {asked:g} s before retrying, more than "
                f"RetryPolicy.max_retry_after_s ({self.policy.max_retry_after_s:g} s) "
                f"allows; raise LLMConfig.retry.max_retry_after_s to wait that long, or try "
                f"again later [{describe(exc)}]"
            ) from exc
        return asked + random.uniform(0.0, self.policy.initial_backoff_s)


async def retrying(
    policy: RetryPolicy,
    request: Callable[[], Awaitable[T]],
    *,
    target: str = "the model",
    timeout_s: float | None = None,
    failed: Exception | None = None,
    started: float | None = None,
) -> T:
    """Await ``request()`` until it succeeds, retrying transient failures per ``policy``.

    A permanent failure, or the last transient one, is re-raised unchanged, except a last
    failure that was a timeout: a :class:`TransientLLMError` naming ``target``, the
    requests that timed out (after ``timeout_s`` each, the per-request timeout, for the
    message), the time waited and the settings that change them. A ``Retry-After``
    beyond the policy's cap is a :class:`TransientLLMError` naming ``target``.

    ``failed``: the first request was made already (by the caller, from ``started``, a
    ``time.monotonic()``) and failed with this transient error; the requests that follow
    are ``request()``'s. Most requests succeed at once, so a caller sends the first
    itself, without this function's machinery (closures, counting), and comes here only
    when it failed.
    """
    if started is None:
        started = time.monotonic()
    requests = timeouts = 0

    async def counted() -> T:
        nonlocal requests, timeouts
        requests += 1
        try:
            return await request()
        except Exception as exc:
            timeouts += _is_timeout(exc)
            raise

    if failed is None:
        # The first goes out without tenacity's machinery (tens of microseconds a call).
        try:
            return await counted()
        except Exception as exc:
            if not is_transient(exc):
                raise
            failed = exc
    else:
        requests, timeouts = 1, int(_is_timeout(failed))
    # The failure is handed to tenacity as its first attempt's outcome, so what follows
    # (waits, Retry-After, stops) is exactly what tenacity would have done from the start.
    first: Exception | None = failed

    async def after_the_first() -> T:
        nonlocal first
        if first is not None:
            failed, first = first, None
            raise failed
        return await counted()

    retryer = tenacity.AsyncRetrying(
        stop=lambda state: (
            state.attempt_number >= policy.max_attempts or timeouts >= policy.max_timeouts
        ),
        wait=BackoffWait(policy, target),
        retry=tenacity.retry_if_exception(is_transient),
        reraise=True,
    )
    try:
        result: T = await retryer(after_the_first)
    except Exception as exc:
        if not _is_timeout(exc):
            raise
        waited = time.monotonic() - started
        stuck = getattr(exc, "stuck", False) is True
        raise _no_answer(target, timeouts, requests, waited, timeout_s, policy, stuck) from exc
    return result


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, HTTPTransportError):
        return isinstance(exc, HTTPTimeout)
    return isinstance(exc, load_litellm().Timeout)


def _no_answer(
    target: str,
    timeouts: int,
    requests: int,
    waited_s: float,
    timeout_s: float | None,
    policy: RetryPolicy,
    stuck: bool,
) -> TransientLLMError:
    if stuck:
        silent = f" (it answered nothing for {timeout_s:g} s or more)" if timeout_s else ""
        why = (
            f"the server looks stuck. For a slow model whose answers each take longer than "
            f"that (e.g. on a CPU) raise the timeout (LLMConfig.timeout_s, the CLI's "
            f"--timeout or {TIMEOUT_ENV})"
        )
    else:
        silent = ""
        why = (
            "the last outlived the bound on one request's wait (LLMConfig.max_wait_s) or "
            "the server answered 408/504, while it was answering others: busy, not stuck. "
            "For answers that take longer to decode (long answers on a CPU) raise "
            "LLMConfig.max_wait_s or lower max_tokens"
        )
    return TransientLLMError(
        f"{target} gave no answer: {timeouts} of {requests} requests timed out{silent}, "
        f"{waited_s:.1f} s waited in all; {why}; to retry after more timeouts raise "
        f"LLMConfig.retry.max_timeouts (now {policy.max_timeouts}) and max_attempts (now "
        f"{policy.max_attempts}; --request-attempts or {REQUEST_ATTEMPTS_ENV})"
    )
