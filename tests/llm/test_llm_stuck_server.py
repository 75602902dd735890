"""A server that accepts requests and never answers is reported soon, with the settings
that change how soon; the requests waiting on it are counted while they wait."""

import asyncio
import time
from collections.abc import Callable

import pytest

from sotopia_are.llm import CONCURRENCY, InFlight, LLMSession, RetryPolicy, TransientLLMError
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"


async def test_a_stuck_server_is_reported_after_its_timeout_budget(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    # Six attempts would wait 6 x 0.4 s; the timeouts' own budget of 2 ends it after two
    # rounds of: the silence limit (0.4 s, or three times the slowest recent answer: the
    # warm-up) and a probe of /models that the wedged server leaves unanswered (0.4 s).
    retry = RetryPolicy(max_attempts=6, max_timeouts=2, initial_backoff_s=0.01)
    session = make_session(timeout_s=0.4, retry=retry)
    # litellm's first call in a process sets itself up for seconds: not the server's time.
    warm_up = await session.generate(MODEL, "test/plain.j2", {"word": "warm-up"})
    llm_server.rule = lambda _request: Reply.hanging()
    started = time.monotonic()
    with pytest.raises(TransientLLMError) as info:
        await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    silence = max(0.4, 3 * warm_up.call.latency_s)
    assert 2 * silence <= time.monotonic() - started < 2 * (silence + 0.4) + 1.0
    assert len(llm_server.chat_requests) == 3
    message = str(info.value)
    assert "'openai/test-model'" in message and llm_server.url in message
    assert "gave no answer: 2 of 2 requests timed out" in message
    assert "answered nothing for" in (info.value.call.attempts[0].error or "")
    assert "s waited in all" in message
    for setting in ("LLMConfig.timeout_s", "--timeout", "SOTOPIA_ARE_TIMEOUT",
                    "max_timeouts (now 2)", "--request-attempts"):  # fmt: skip
        assert setting in message
    assert info.value.call is not None and len(info.value.call.attempts) == 2


def test_by_default_one_timeout_ends_the_call() -> None:
    # A wedged server is reported after one default timeout: about two minutes.
    assert RetryPolicy().max_timeouts == 1


async def test_fast_failures_keep_every_attempt_after_a_timeout(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(Reply.server_error(502), Reply.hanging(), Reply.server_error(503), "ok")
    retry = RetryPolicy(max_attempts=4, max_timeouts=2, initial_backoff_s=0.01)
    result = await make_session(timeout_s=0.3, retry=retry).generate(
        MODEL, "test/plain.j2", {"word": "x"}
    )
    assert result.value == "ok" and len(llm_server.chat_requests) == 4


async def test_requests_in_flight_are_counted_while_they_wait(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    session = make_session(timeout_s=0.6, retry=RetryPolicy(max_attempts=1))
    await session.generate(MODEL, "test/plain.j2", {"word": "warm-up"})
    llm_server.rule = lambda _request: Reply.hanging()
    assert CONCURRENCY.in_flight() == InFlight()
    calls = [
        asyncio.create_task(session.generate(MODEL, "test/plain.j2", {"word": str(n)}))
        for n in range(2)
    ]
    await asyncio.sleep(0.3)
    waiting = CONCURRENCY.in_flight()
    assert waiting.count == 2 and 0.2 <= waiting.oldest_s < 0.6
    assert waiting.limit == 4  # the default initial limit of the endpoint they wait on
    assert waiting.describe().startswith("2 calls in flight (at most 4 now), oldest ")
    for call in calls:
        with pytest.raises(TransientLLMError):
            await call
    assert CONCURRENCY.in_flight() == InFlight()
    assert InFlight().describe() == ""


async def test_a_busy_server_past_the_max_wait_is_not_called_stuck(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    # Decoding takes longer than the bound on one request's wait, while the server answers
    # its probes: the message says busy and names max_wait_s, not a stuck server.
    llm_server.latency = 3.0
    session = make_session(timeout_s=0.2, max_wait_s=0.8, retry=RetryPolicy(max_attempts=1))
    with pytest.raises(TransientLLMError) as info:
        await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    message = str(info.value)
    assert "gave no answer: 1 of 1 requests timed out," in message
    assert "busy, not stuck" in message and "LLMConfig.max_wait_s" in message
    assert "looks stuck" not in message and "answered nothing" not in message
