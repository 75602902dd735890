"""Retrying transient failures with tenacity: exponential backoff with full jitter, and
the server's ``Retry-After`` honoured when it gives one (see
:class:`~sotopia_are.llm.config.RetryPolicy`). A server asking for a longer wait than the
policy allows fails the request at once: a shortened wait would only burn an attempt on
a request the server already said it would refuse.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import tenacity

from sotopia_are.llm.config import RetryPolicy
from sotopia_are.llm.errors import TransientLLMError
from sotopia_are.llm.failures import describe, is_transient, retry_after_seconds

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
    policy: RetryPolicy, request: Callable[[], Awaitable[T]], *, target: str = "the model"
) -> T:
    """Await ``request()`` until it succeeds, retrying transient failures per ``policy``.

    A permanent failure, or the last transient one, is re-raised unchanged; a
    ``Retry-After`` beyond the policy's cap is a :class:`TransientLLMError` naming
    ``target``.
    """
    retryer = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(policy.max_attempts),
        wait=BackoffWait(policy, target),
        retry=tenacity.retry_if_exception(is_transient),
        reraise=True,
    )
    result: T = await retryer(request)
    return result
