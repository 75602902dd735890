"""Per-endpoint limits adapt to the server: a 429 halves the requests in flight (once per
overload, not once per refused request), successes raise them back to the ceiling; the
defaults are high for a server at an api_base and lower for a provider's endpoint."""

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from sotopia_are.llm import (
    DEFAULT_HOSTED_CONCURRENCY,
    DEFAULT_LOCAL_CONCURRENCY,
    AdaptiveLimit,
    ConcurrencyRegistry,
    LLMConfig,
    LLMSession,
    RetryPolicy,
)
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"


def test_default_limits_are_high_at_an_api_base_and_lower_at_a_provider() -> None:
    config = LLMConfig()
    assert config.max_concurrency is None
    assert config.concurrency_for(config.endpoint("openai/x", api_base="http://h/v1")) == 128
    assert config.concurrency_for(config.endpoint("gpt-4o-mini")) == 16
    assert (DEFAULT_LOCAL_CONCURRENCY, DEFAULT_HOSTED_CONCURRENCY) == (128, 16)
    fixed = LLMConfig(max_concurrency=5)
    assert fixed.concurrency_for(fixed.endpoint("gpt-4o-mini")) == 5


async def test_a_throttle_halves_once_per_epoch_and_successes_raise_it_back() -> None:
    limit = AdaptiveLimit(8)
    epochs = [await limit.acquire() for _ in range(8)]
    assert limit.locked() and limit.held == 8
    # The overload answers all eight requests with 429s: one halving, not eight.
    for epoch in epochs:
        limit.release(epoch, throttled=True)
    assert limit.limit == 4 and limit.held == 0
    # Four successes in a row raise it to 5, five more to 6, and so on up to the ceiling.
    rounds = []
    while limit.limit < limit.ceiling:
        epoch = await limit.acquire()
        limit.release(epoch, ok=True)
        rounds.append(limit.limit)
    assert len(rounds) == 4 + 5 + 6 + 7 and rounds[:4] == [4, 4, 4, 5] and limit.limit == 8
    epoch = await limit.acquire()
    limit.release(epoch, ok=True)
    assert limit.limit == 8  # never above the ceiling


async def test_a_lowered_limit_holds_new_requests_until_enough_finish() -> None:
    limit = AdaptiveLimit(4)
    held = [await limit.acquire() for _ in range(4)]
    limit.release(held.pop(), throttled=True)  # limit 2, three still held
    waiter = asyncio.create_task(limit.acquire())
    await asyncio.sleep(0)
    limit.release(held.pop())  # two held: still at the limit
    await asyncio.sleep(0)
    assert not waiter.done()
    limit.release(held.pop())  # one held: the waiter gets its slot
    await asyncio.sleep(0)
    assert waiter.done() and limit.held == 2


async def test_a_cancelled_waiter_gives_up_its_place() -> None:
    limit = AdaptiveLimit(1)
    first = await limit.acquire()
    waiter = asyncio.create_task(limit.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    limit.release(first)
    assert limit.held == 0 and not limit.locked()


async def test_the_registry_keeps_one_limit_per_endpoint() -> None:
    registry = ConcurrencyRegistry()
    assert registry.limit("m@x", 3) is registry.limit("m@x", 3)
    with pytest.raises(ValueError, match="already has a concurrency limit of 3"):
        registry.limit("m@x", 4)


async def test_a_burst_of_429s_backs_off_then_recovers(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.latency = 0.02
    throttling = True

    def rule(_body: Any) -> Any:
        return Reply.rate_limited(0.05) if throttling else "fine"

    llm_server.rule = rule
    registry = ConcurrencyRegistry()
    retry = RetryPolicy(max_attempts=20, initial_backoff_s=0.01, max_backoff_s=0.02)
    session = make_session({"concurrency": registry}, max_concurrency=8, retry=retry)

    async def call(n: int) -> str:
        return (await session.generate(MODEL, "test/plain.j2", {"word": str(n)})).value

    calls = [asyncio.create_task(call(n)) for n in range(8)]
    limit = registry.limit(f"{MODEL}@{llm_server.url}", 8)
    for _ in range(100):
        if limit.limit < 8:
            break
        await asyncio.sleep(0.05)
    assert limit.limit <= 4  # the 429s lowered it
    await asyncio.sleep(0.2)  # the requests sent before it was lowered are answered
    throttling = False
    llm_server.reset_stats()
    assert await asyncio.gather(*calls) == ["fine"] * 8
    assert llm_server.max_in_flight <= 4  # the lowered limit held
    # Successes bring it back: 4 + 5 + 6 + 7 requests from 4 to 8.
    more = [call(n) for n in range(40)]
    await asyncio.gather(*more)
    assert limit.limit == 8
