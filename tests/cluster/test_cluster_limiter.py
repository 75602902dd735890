"""The Redis limiter keeps an endpoint's limit among every process sharing the store: never
more than ``limit`` slots held, a dead holder's slots back after the ttl (a live one's
renewed), and an LLM session holding one for each request when its registry shares it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sotopia_are.cluster import RedisLimiter
from sotopia_are.llm import ConcurrencyRegistry, LLMConfig, LLMSession, PromptLibrary
from sotopia_are.storage import EmbeddedRedis
from sotopia_are.testing import LocalLLMServer

ENDPOINT = "openai/test-model@http://127.0.0.1:1/v1"
TEST_PROMPTS = Path(__file__).parents[1] / "llm" / "prompts"


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real Redis (the embedded server) on a unix socket."""
    with EmbeddedRedis(tmp_path / "redis") as client:
        yield f"unix://{client.connection_pool.connection_kwargs['path']}"


async def test_never_more_than_the_limit_among_holders(redis_url: str) -> None:
    # Three limiters on one Redis: three processes, as far as the store can tell.
    limiters = [RedisLimiter(redis_url, 3) for _ in range(3)]
    holding, most = 0, 0

    async def request(limiter: RedisLimiter) -> None:
        nonlocal holding, most
        await limiter.acquire(ENDPOINT)
        holding += 1
        most = max(most, holding)
        assert limiter.in_use(ENDPOINT) <= 3
        await asyncio.sleep(0.01)
        holding -= 1
        await limiter.release(ENDPOINT)

    try:
        await asyncio.gather(*(request(limiters[i % 3]) for i in range(30)))
        assert most == 3
        assert limiters[0].in_use(ENDPOINT) == 0
        assert limiters[0].in_use("another@endpoint") == 0
    finally:
        for limiter in limiters:
            limiter.close()


TTL = 1.0

HOLDER = f"""
import asyncio, sys, time
from sotopia_are.cluster import RedisLimiter
limiter = RedisLimiter(sys.argv[1], 1, ttl_s={TTL})
asyncio.run(limiter.acquire(sys.argv[2]))
print("held", flush=True)
time.sleep(600)
"""


async def test_a_dead_holders_slot_comes_back_after_the_ttl(redis_url: str) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, redis_url, ENDPOINT], stdout=subprocess.PIPE, text=True
    )
    waiter = RedisLimiter(redis_url, 1, ttl_s=TTL)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        # Alive, the holder renews its lease well past the ttl.
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(waiter.acquire(ENDPOINT), timeout=2.5 * TTL)
        holder.kill()
        holder.wait()
        killed = time.monotonic()
        await asyncio.wait_for(waiter.acquire(ENDPOINT), timeout=10)
        # Within the ttl and a poll or two (with room for a busy machine).
        assert time.monotonic() - killed < TTL + 2
        assert waiter.in_use(ENDPOINT) == 1
        await waiter.release(ENDPOINT)
        assert waiter.in_use(ENDPOINT) == 0
    finally:
        holder.kill()
        holder.wait()
        waiter.close()


async def test_a_session_holds_a_shared_slot_for_each_request(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.latency = 0.05
    registry = ConcurrencyRegistry()
    registry.shared = limiter = RedisLimiter(redis_url, 2)
    # Its own bound (16) is looser: the shared one is what holds.
    config = LLMConfig(api_base=llm_server.url, api_key="sk-test", max_concurrency=16)
    session = LLMSession(config, prompts=PromptLibrary(TEST_PROMPTS), concurrency=registry)
    try:
        results = await asyncio.gather(
            *(session.generate("openai/m", "test/plain.j2", {"word": str(i)}) for i in range(8))
        )
        assert sorted(r.value for r in results) == sorted(f"Say {i}." for i in range(8))
        assert llm_server.max_in_flight == 2
        assert limiter.in_use(f"openai/m@{llm_server.url}") == 0
    finally:
        limiter.close()
