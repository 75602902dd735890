"""Retrying transient failures with tenacity: exponential backoff with full jitter, and
the server's ``Retry-After`` honoured when it gives one (see
:class:`~sotopia_are.llm.config.RetryPolicy`)."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import tenacity

from sotopia_are.llm.config import RetryPolicy
from sotopia_are.llm.failures import is_transient, retry_after_seconds

__all__ = ["BackoffWait", "retrying"]

T = TypeVar("T")


class BackoffWait(tenacity.wait.wait_base):
    """tenacity wait strategy: ``Retry-After`` if the server sent one, else full jitter."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self._jitter = tenacity.wait_random_exponential(
            multiplier=policy.initial_backoff_s, max=policy.max_backoff_s
        )

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        asked = retry_after_seconds(exc) if exc is not None else None
        if asked is None:
            return float(self._jitter(retry_state))
        spread = random.uniform(0.0, self.policy.initial_backoff_s)
        return min(asked, self.policy.max_retry_after_s) + spread


async def retrying(policy: RetryPolicy, request: Callable[[], Awaitable[T]]) -> T:
    """Await ``request()`` until it succeeds, retrying transient failures per ``policy``.

    A permanent failure, or the last transient one, is re-raised unchanged.
    """
    retryer = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(policy.max_attempts),
        wait=BackoffWait(policy),
        retry=tenacity.retry_if_exception(is_transient),
        reraise=True,
    )
    result: T = await retryer(request)
    return result
