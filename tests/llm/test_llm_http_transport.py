"""The HTTP transport (aiohttp straight to an OpenAI-compatible api_base) against the
litellm path, on the same scripted server: the same parsed answers, usage, cost and
records; the same retries and errors (429 with Retry-After, 5xx, 401, a hang, a 200 that
is no chat completion); replays identical; ``auto`` picks it only for OpenAI-compatible
models at an api_base, and ``transport="litellm"`` still goes through litellm."""

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from sotopia_are.llm import (
    API_KEY_ENV,
    LLMCall,
    LLMConfig,
    LLMSession,
    OutputModeMemory,
    PermanentLLMError,
    Recorder,
    Replayer,
    RetryPolicy,
    TransientLLMError,
)
from sotopia_are.llm.errors import MalformedReplyError, RequestRejectedError
from sotopia_are.llm.http_transport import PLACEHOLDER_KEY, choose_transport, wire_model
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"
TEST_PROMPTS = Path(__file__).parent / "prompts"
TRANSPORTS = ["http", "litellm"]


class Move(BaseModel):
    action: str
    steps: int


def comparable(call: LLMCall) -> dict[str, Any]:
    """A call record without its timings (the one thing a transport may change)."""
    data = call.model_dump(mode="json", exclude={"latency_s"})
    for attempt in data["attempts"]:
        attempt.pop("latency_s")
        attempt.pop("queued_s")
    return data


def test_auto_sends_openai_compatible_models_at_an_api_base_over_http() -> None:
    base = "http://127.0.0.1:9/v1"
    assert choose_transport("openai/qwen", base, "auto") == "http"
    assert choose_transport("hosted_vllm/Qwen/Qwen2.5-7B", base, "auto") == "http"
    # Other providers speak their own APIs even at a base URL; no base URL: litellm.
    assert choose_transport("ollama/llama3", base, "auto") == "litellm"
    assert choose_transport("anthropic/claude-3-5-haiku", base, "auto") == "litellm"
    assert choose_transport("gpt-4o-mini", base, "auto") == "litellm"
    assert choose_transport("openai/gpt-4o-mini", None, "auto") == "litellm"
    assert choose_transport("openai/qwen", base, "litellm") == "litellm"
    assert choose_transport("ollama/llama3", base, "http") == "http"
    with pytest.raises(PermanentLLMError, match="has none"):
        choose_transport("openai/gpt-4o-mini", None, "http")
    assert LLMConfig(api_base=base).endpoint(MODEL).transport == "http"
    assert LLMConfig(api_base=base, transport="litellm").endpoint(MODEL).transport == "litellm"
    assert wire_model("openai/Qwen/Qwen2.5-7B") == "Qwen/Qwen2.5-7B"
    assert wire_model("ollama/llama3") == "ollama/llama3"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_what_is_sent(
    transport: str, llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue('{"action": "sit", "steps": 1}')
    session = make_session(transport=transport, params={"temperature": 0.3})
    await session.generate(
        MODEL,
        "test/plain.j2",
        {"word": "x"},
        Move,
        params={"seed": 7, "extra_body": {"top_k": 20}},
        max_tokens=64,
    )
    (request,) = llm_server.chat_requests
    body = request.body
    assert body["model"] == "test-model"  # the provider prefix is litellm's, not the server's
    assert body["messages"][-1]["role"] == "user"
    assert (body["max_tokens"], body["temperature"], body["seed"]) == (64, 0.3, 7)
    assert body["top_k"] == 20 and "extra_body" not in body  # merged into the body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["action", "steps"]
    assert request.headers["authorization"] == "Bearer sk-test"
    user_agent = request.headers.get("user-agent", "")
    assert ("sotopia-are" in user_agent) == (transport == "http")


async def test_both_transports_give_the_same_records(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    script = [
        Reply(content="fine thanks", prompt_tokens=100, completion_tokens=20),
        Reply.server_error(503),
        Reply(content="not json at all", prompt_tokens=50, completion_tokens=5),
        Reply(content='```json\n{"action": "wave", "steps": 2}\n```', prompt_tokens=70),
        Reply(content='{"action": "run", "steps": 3}', prompt_tokens=10, completion_tokens=9),
    ]
    records: dict[str, list[dict[str, Any]]] = {}
    for transport in TRANSPORTS:
        llm_server.enqueue(*script)
        session = make_session(transport=transport)
        await session.generate(MODEL, "test/plain.j2", {"word": "hi"})
        await session.generate(MODEL, "test/plain.j2", {"word": "go"}, Move)
        await session.generate("openai/gpt-4o-mini", "test/plain.j2", {"word": "up"}, Move)
        records[transport] = [comparable(call) for call in session.calls]
    http, litellm = records["http"], records["litellm"]
    assert http[0]["raw_text"] == "fine thanks" and http[0]["cost_usd"] is None
    assert http[1]["parsed"] == {"action": "wave", "steps": 2}
    assert [a["error_kind"] for a in http[1]["attempts"]] == ["transient", "invalid_output", None]
    assert http[2]["cost_usd"] is not None and http[2]["cost_usd"] > 0  # a priced model
    # Error texts name each transport's own exception; their kinds and everything else agree.
    for ours, theirs in zip(http, litellm, strict=True):
        for attempt in (*ours["attempts"], *theirs["attempts"]):
            if attempt["error_kind"] == "transient":
                assert attempt["error"].startswith("ServiceUnavailableError: ")
                attempt["error"] = "ServiceUnavailableError"
    assert http == litellm
    assert http[2]["cost_usd"] == pytest.approx(litellm[2]["cost_usd"])


async def test_a_429_waits_its_retry_after_then_succeeds(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(Reply.rate_limited(0.4), Reply.rate_limited(0.2, header="retry-after-ms"))
    llm_server.enqueue("done")
    result = await make_session(transport="http").generate(MODEL, "test/plain.j2", {"word": "x"})
    assert result.value == "done"
    first, second, third = llm_server.chat_requests
    assert second.received_at - first.received_at >= 0.4
    assert third.received_at - second.received_at >= 0.2
    errors = [a.error or "" for a in result.call.attempts[:2]]
    assert all(e.startswith("RateLimitError: ") and "429" in e for e in errors)


async def test_a_retry_after_beyond_the_cap_fails_at_once(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(Reply.rate_limited(600))
    session = make_session(transport="http", retry=RetryPolicy(max_retry_after_s=5))
    with pytest.raises(TransientLLMError, match="asked to wait 600 s"):
        await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    assert len(llm_server.chat_requests) == 1


async def test_5xx_are_retried_then_reported(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = lambda _request: Reply.server_error(500)
    session = make_session(transport="http", retry=RetryPolicy(max_attempts=3, initial_backoff_s=0))
    with pytest.raises(TransientLLMError) as info:
        await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    assert len(llm_server.chat_requests) == 3
    message = str(info.value)
    assert "after 3 requests" in message and "InternalServerError" in message
    assert "internal error (scripted)" in message and llm_server.url in message


@pytest.mark.parametrize("status", [401, 403])
async def test_a_rejected_key_is_permanent_and_names_the_variable(
    status: int,
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    llm_server.rule = lambda _request: Reply.error(status, "Incorrect API key provided")
    with pytest.raises(PermanentLLMError) as info:
        await make_session(transport="http", api_key=None).generate(
            MODEL, "test/plain.j2", {"word": "x"}
        )
    assert len(llm_server.chat_requests) == 1
    message = str(info.value)
    assert "the credentials were rejected" in message and "OPENAI_API_KEY" in message
    assert "Incorrect API key provided" in message
    assert llm_server.chat_requests[0].headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"


async def test_a_400_is_this_requests_rejection_quoting_the_server(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = lambda _request: Reply.error(400, "maximum context length is 8192 tokens")
    with pytest.raises(RequestRejectedError, match="maximum context length is 8192"):
        await make_session(transport="http", output_mode="prompt").generate(
            MODEL, "test/plain.j2", {"word": "x"}, Move
        )
    assert len(llm_server.chat_requests) == 1


async def test_a_rejected_response_format_falls_back_as_with_litellm(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    def rule(body: Any) -> Any:
        if body.get("response_format", {}).get("type") == "json_schema":
            return Reply.error(400, "response_format json_schema is not supported")
        return '{"action": "sit", "steps": 1}'

    llm_server.rule = rule
    session = make_session({"output_modes": OutputModeMemory()}, transport="http")
    result = await session.generate("openai/fallback-model", "test/plain.j2", {"word": "x"}, Move)
    assert result.value == Move(action="sit", steps=1)
    assert result.call.output_mode == "json_object"


async def test_a_hang_times_out(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = lambda _request: Reply.hanging()
    session = make_session(transport="http", timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(TransientLLMError) as info:
        await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    assert 0.3 <= time.monotonic() - started < 2.0
    assert "gave no answer: 1 of 1 requests timed out (it answered nothing for 0.3 s" in str(
        info.value
    )
    assert info.value.call is not None
    assert (info.value.call.attempts[0].error or "").startswith("Timeout: ")


async def test_an_unreachable_server_is_transient_then_reported(
    make_session: Callable[..., LLMSession],
) -> None:
    retry = RetryPolicy(max_attempts=2, initial_backoff_s=0)
    session = make_session(transport="http", api_base="http://127.0.0.1:9/v1", retry=retry)
    with pytest.raises(TransientLLMError) as info:
        await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    assert "APIConnectionError" in str(info.value) and "after 2 requests" in str(info.value)


async def test_an_api_base_that_is_no_url_stops_at_once(
    make_session: Callable[..., LLMSession],
) -> None:
    session = make_session(transport="http", api_base="localhost:8000")
    with pytest.raises(PermanentLLMError, match="is not an http"):
        await session.generate(MODEL, "test/plain.j2", {"word": "x"})


COMPLETION = {"id": "x", "object": "chat.completion", "created": 1}
GARBAGE = {
    "no choices": json.dumps({**COMPLETION, "choices": []}).encode(),
    "no message": json.dumps({**COMPLETION, "choices": [{"index": 0}]}).encode(),
    "a list": b"[1, 2]",
    "not JSON": b"<html>502 bad gateway</html>",
    "empty": b"",
    "truncated": json.dumps({**COMPLETION, "choices": [{"message": {}}]}).encode()[:30],
}


@pytest.mark.parametrize("kind", list(GARBAGE))
async def test_a_200_that_is_no_chat_completion_reads_as_with_litellm(
    kind: str, llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    messages: dict[str, str] = {}
    for transport in TRANSPORTS:
        llm_server.enqueue(Reply(body=GARBAGE[kind]))
        session = make_session(transport=transport, retry=RetryPolicy(max_attempts=1))
        with pytest.raises(MalformedReplyError) as info:
            await session.generate(MODEL, "test/plain.j2", {"word": "x"})
        messages[transport] = str(info.value)
    assert messages["http"] == messages["litellm"]
    assert "not a chat completion" in messages["http"] and llm_server.url in messages["http"]


async def test_a_reply_without_usage_or_content(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    message = {"role": "assistant", "content": None}
    llm_server.enqueue(
        Reply(body=json.dumps({**COMPLETION, "choices": [{"message": message}]}).encode())
    )
    result = await make_session(transport="http").generate(MODEL, "test/plain.j2", {"word": "x"})
    assert result.value == ""
    # Unknown, not zero: the server said nothing about tokens.
    assert (result.call.prompt_tokens, result.call.completion_tokens) == (None, None)


@pytest.mark.parametrize("recorded_with", TRANSPORTS)
async def test_a_replay_gives_identical_records(
    recorded_with: str,
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    tmp_path: Any,
) -> None:
    path = tmp_path / "run.jsonl"
    llm_server.enqueue(Reply.server_error(500), "hello there", '{"action": "go", "steps": 4}')
    recording = make_session({"recorder": Recorder(path)}, transport=recorded_with)
    await recording.generate(MODEL, "test/plain.j2", {"word": "a"})
    await recording.generate(MODEL, "test/plain.j2", {"word": "b"}, Move)
    recording.close()
    served = len(llm_server.chat_requests)
    replaying = make_session({"replayer": Replayer(path)}, transport="http")
    await replaying.generate(MODEL, "test/plain.j2", {"word": "a"})
    await replaying.generate(MODEL, "test/plain.j2", {"word": "b"}, Move)
    assert len(llm_server.chat_requests) == served  # nothing went to the network
    for played, replayed in zip(recording.calls, replaying.calls, strict=True):
        assert (replayed.raw_text, replayed.parsed) == (played.raw_text, played.parsed)
        assert (replayed.prompt_tokens, replayed.completion_tokens) == (
            played.prompt_tokens,
            played.completion_tokens,
        )
        assert replayed.messages == played.messages and replayed.params == played.params
        assert replayed.attempts[-1].source == "replay"


def test_the_http_path_never_imports_litellm_and_closes_its_connections(
    llm_server: LocalLLMServer,
) -> None:
    # A fresh process: answers, a 5xx retried, a rejected key and an unknown model, over
    # HTTP, and no "Unclosed client session" when asyncio.run ends.
    llm_server.enqueue(
        "one", Reply.server_error(502), "two", Reply.error(401, "bad key"), Reply.error(404, "gone")
    )
    code = textwrap.dedent(
        f"""
        import asyncio, sys, warnings
        warnings.simplefilter("always")
        from sotopia_are.llm import (
            LLMConfig, LLMSession, PermanentLLMError, PromptLibrary, RetryPolicy)
        config = LLMConfig(api_base={llm_server.url!r}, api_key="k",
                           retry=RetryPolicy(initial_backoff_s=0))
        async def main():
            session = LLMSession(config, prompts=PromptLibrary({str(TEST_PROMPTS)!r}))
            for word in ("a", "b", "c", "d"):
                try:
                    call = await session.generate("openai/m", "test/plain.j2", {{"word": word}})
                    print(call.value)
                except PermanentLLMError as error:
                    print(type(error).__name__)
        asyncio.run(main())
        print("litellm" in sys.modules)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["one", "two", "PermanentLLMError", "PermanentLLMError", "False"]
    assert "Unclosed" not in done.stderr and "Traceback" not in done.stderr, done.stderr
