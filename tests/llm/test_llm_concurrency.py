"""The per-endpoint concurrency bound holds across sessions and many concurrent calls."""

import asyncio
from collections.abc import Callable

import pytest

from sotopia_are.llm import CONCURRENCY, ConcurrencyRegistry, LLMSession
from sotopia_are.testing import LocalLLMServer

MODEL = "openai/test-model"


async def test_200_concurrent_calls_never_exceed_the_bound(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    bound = 7
    llm_server.latency = 0.01
    # Two sessions (say, agents and a judge) share the endpoint's limit.
    first, second = make_session(max_concurrency=bound), make_session(max_concurrency=bound)
    calls = [
        (first if i % 2 else second).generate(MODEL, "test/plain.j2", {"word": str(i)})
        for i in range(200)
    ]
    results = await asyncio.gather(*calls)
    assert sorted(r.value for r in results) == sorted(f"Say {i}." for i in range(200))
    assert len(llm_server.chat_requests) == 200
    assert llm_server.max_in_flight == bound


async def test_different_endpoints_have_separate_limits(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.latency = 0.05
    session = make_session(max_concurrency=2)
    calls = [
        session.generate(f"openai/model-{i % 2}", "test/plain.j2", {"word": str(i)})
        for i in range(12)
    ]
    await asyncio.gather(*calls)
    assert llm_server.max_in_flight == 4


async def test_conflicting_limits_for_one_endpoint_are_refused() -> None:
    registry = ConcurrencyRegistry()
    assert registry.semaphore("m@x", 3) is registry.semaphore("m@x", 3)
    with pytest.raises(ValueError, match="already has a concurrency limit of 3"):
        registry.semaphore("m@x", 4)


def test_each_event_loop_gets_its_own_semaphore() -> None:
    async def grab() -> asyncio.Semaphore:
        return CONCURRENCY.semaphore("loop-test@default", 2)

    assert asyncio.run(grab()) is not asyncio.run(grab())
