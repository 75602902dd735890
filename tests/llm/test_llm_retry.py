"""Transient failures are retried (honouring Retry-After); permanent ones fail at once."""

from collections.abc import Callable

import pytest

from sotopia_are.llm import (
    LLMSession,
    PermanentLLMError,
    RetryPolicy,
    TransientLLMError,
)
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"


async def test_429_is_retried_after_retry_after(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(Reply.rate_limited(0.4), "done")
    session = make_session()
    result = await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    assert result.value == "done"
    first, second = llm_server.chat_requests
    # Backoff in these tests is at most 0.05 s, so only Retry-After explains the gap (no
    # upper bound: a busy machine may be slower, never faster).
    assert second.received_at - first.received_at >= 0.4
    errors = [a.error_kind for a in result.call.attempts]
    assert errors == ["transient", None]
    assert "RateLimitError" in (result.call.attempts[0].error or "")


async def test_retry_after_ms_is_honoured(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(Reply.rate_limited(0.3, header="retry-after-ms"), "done")
    await make_session().generate(MODEL, "test/plain.j2", {"word": "x"})
    first, second = llm_server.chat_requests
    assert second.received_at - first.received_at >= 0.3


async def test_5xx_malformed_body_and_hang_are_retried(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(
        Reply.server_error(500),
        Reply.server_error(503),
        Reply.malformed(),
        "finally",
    )
    session = make_session(retry=RetryPolicy(max_attempts=5, initial_backoff_s=0.01))
    result = await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    assert result.value == "finally"
    assert len(llm_server.chat_requests) == 4
    assert [a.error_kind for a in result.call.attempts] == ["transient"] * 3 + [None]


async def test_a_hanging_request_times_out_and_is_retried(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(Reply.hanging(), "after the hang")
    retry = RetryPolicy(max_attempts=4, max_timeouts=2, initial_backoff_s=0.01)
    session = make_session(timeout_s=0.3, retry=retry)
    result = await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    assert result.value == "after the hang"
    assert "Timeout" in (result.call.attempts[0].error or "")
    assert result.call.attempts[0].latency_s >= 0.3


async def test_transient_failures_give_up_after_max_attempts(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = lambda _request: Reply.server_error(502)
    session = make_session(retry=RetryPolicy(max_attempts=3, initial_backoff_s=0.01))
    with pytest.raises(TransientLLMError) as info:
        await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    assert len(llm_server.chat_requests) == 3
    message = str(info.value)
    assert "test-model" in message and "after 3 requests" in message
    assert info.value.call is not None
    assert len(info.value.call.attempts) == 3 and info.value.call.error_type == "TransientLLMError"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply.error(401, "Incorrect API key provided"), "OPENAI_API_KEY"),
        (Reply.error(403, "forbidden"), "SOTOPIA_ARE_API_KEY"),
        (Reply.error(404, "The model `test-model` does not exist"), "SOTOPIA_ARE_API_BASE"),
        (Reply.error(400, "Unrecognized request argument"), "LLMConfig.params"),
    ],
)
async def test_permanent_errors_fail_fast_with_the_fix(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    reply: Reply,
    expected: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm_server.rule = lambda _request: reply
    session = make_session()
    with pytest.raises(PermanentLLMError) as info:
        await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    assert len(llm_server.chat_requests) == 1  # failed at once: no retry
    message = str(info.value)
    assert "'openai/test-model'" in message and llm_server.url in message
    assert expected in message and reply.error_message in message
    assert info.value.call is not None and info.value.call.attempts[0].error_kind == "permanent"


async def test_a_model_without_provider_is_a_clear_permanent_error(
    make_session: Callable[..., LLMSession],
) -> None:
    with pytest.raises(PermanentLLMError, match=r"prefix it with one \(e\.g\. 'openai/mystery"):
        await make_session().generate("mystery-model", "test/plain.j2", {"word": "x"})


async def test_an_unreachable_server_is_transient_then_gives_up(
    make_session: Callable[..., LLMSession],
) -> None:
    session = make_session(
        api_base="http://127.0.0.1:9/v1", retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.01)
    )
    with pytest.raises(TransientLLMError, match=r"127\.0\.0\.1:9"):
        await session.generate(MODEL, "test/plain.j2", {"word": "x"})


async def test_a_retry_after_beyond_the_cap_fails_at_once_naming_the_setting(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(Reply.rate_limited(120), "too late")
    session = make_session(retry=RetryPolicy(max_attempts=3, max_retry_after_s=30))
    with pytest.raises(TransientLLMError) as info:
        await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    message = str(info.value)
    assert "asked to wait 120 s" in message and "'openai/test-model'" in message
    assert "RetryPolicy.max_retry_after_s (30 s)" in message
    assert len(llm_server.chat_requests) == 1  # no shortened wait burning an attempt
    assert info.value.call is not None
    assert [a.error_kind for a in info.value.call.attempts] == ["transient"]
    assert info.value.call.error_type == "TransientLLMError"
