"""Output mode ``auto`` against OpenAI-compatible servers: the schema is sent, and a
server that rejects it gets the next weaker mode, remembered per endpoint."""

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from sotopia_are.llm import LLMSession, PermanentLLMError
from sotopia_are.llm.structured import OutputModeMemory, resolve_output_mode
from sotopia_are.testing import LocalLLMServer, Reply, ReplyLike

MODEL = "openai/test-model"
ANSWER = '{"score": 4, "reason": "fine"}'


class Verdict(BaseModel):
    score: int
    reason: str


def refusing(*formats: str, message: str = "") -> Callable[[Mapping[str, Any]], ReplyLike]:
    """A server rule that answers 400 to requests whose response_format is one of
    ``formats`` (as llama.cpp or vLLM word it), and ANSWER otherwise."""

    def rule(body: Mapping[str, Any]) -> ReplyLike:
        kind = (body.get("response_format") or {}).get("type")
        if kind in formats:
            return Reply.error(400, message or f"response_format type {kind!r} is not supported")
        return ANSWER

    return rule


def sent_formats(server: LocalLLMServer) -> list[str | None]:
    return [(r.body.get("response_format") or {}).get("type") for r in server.chat_requests]


def test_auto_sends_the_schema_to_any_openai_compatible_base_url() -> None:
    # litellm knows nothing of "openai/qwen15", but the server behind the URL enforces schemas.
    assert resolve_output_mode("auto", "openai/qwen15", "http://127.0.0.1:8089/v1") == (
        "json_schema"
    )
    assert resolve_output_mode("auto", "openai/qwen15") == "prompt"
    assert resolve_output_mode("prompt", "openai/qwen15", "http://x/v1") == "prompt"


async def test_auto_sends_json_schema_with_an_api_base(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(ANSWER)
    result = await make_session().generate(MODEL, "test/plain.j2", {"word": "x"}, Verdict)
    assert result.call.output_mode == "json_schema"
    assert sent_formats(llm_server) == ["json_schema"]


async def test_a_rejected_schema_falls_back_to_json_object_and_is_remembered(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = refusing("json_schema")
    memory = OutputModeMemory()
    session = make_session(session_kwargs={"output_modes": memory})
    first = await session.generate(MODEL, "test/plain.j2", {"word": "x"}, Verdict)
    second = await session.generate(MODEL, "test/plain.j2", {"word": "y"}, Verdict)
    assert first.value == second.value == Verdict(score=4, reason="fine")
    # One rejected request, then json_object, and json_object straight away afterwards.
    assert sent_formats(llm_server) == ["json_schema", "json_object", "json_object"]
    assert first.call.output_mode == second.call.output_mode == "json_object"
    assert memory.get(f"{MODEL}@{llm_server.url}") == "json_object"
    # The rejected request is accounted for: a failed call naming the server's reason.
    rejected, *_ = session.calls
    assert not rejected.ok and rejected.output_mode == "json_schema"
    assert rejected.error is not None and "not supported" in rejected.error
    assert len(session.calls) == 3
    # json_object puts the schema in the prompt, since the server will not enforce it.
    assert "JSON Schema" in llm_server.chat_requests[1].messages[-1]["content"]


async def test_a_server_without_any_json_mode_gets_the_schema_in_the_prompt(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = refusing("json_schema", "json_object", message="unknown field: schema")
    session = make_session(session_kwargs={"output_modes": OutputModeMemory()})
    result = await session.generate(MODEL, "test/plain.j2", {"word": "x"}, Verdict)
    assert result.call.output_mode == "prompt"
    assert sent_formats(llm_server) == ["json_schema", "json_object", None]


async def test_a_bad_request_for_another_reason_does_not_change_the_mode(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = refusing(
        "json_schema", message="This model's maximum context length is 8192 tokens"
    )
    memory = OutputModeMemory()
    session = make_session(session_kwargs={"output_modes": memory})
    with pytest.raises(PermanentLLMError, match="maximum context length"):
        await session.generate(MODEL, "test/plain.j2", {"word": "x"}, Verdict)
    assert sent_formats(llm_server) == ["json_schema"]
    assert memory.get(f"{MODEL}@{llm_server.url}") is None


async def test_an_explicit_mode_is_never_changed(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = refusing("json_schema")
    session = make_session(
        output_mode="json_schema", session_kwargs={"output_modes": OutputModeMemory()}
    )
    with pytest.raises(PermanentLLMError, match="not supported"):
        await session.generate(MODEL, "test/plain.j2", {"word": "x"}, Verdict)
    assert sent_formats(llm_server) == ["json_schema"]


async def test_a_recording_made_after_a_fallback_replays_in_auto_mode(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], tmp_path: Path
) -> None:
    llm_server.rule = refusing("json_schema")
    recording = tmp_path / "calls.jsonl"
    recorder = make_session(session_kwargs={"output_modes": OutputModeMemory()})
    live = LLMSession.recording(recording, recorder.config, prompts=recorder.prompts)
    live.output_modes = OutputModeMemory()
    await live.generate(MODEL, "test/plain.j2", {"word": "x"}, Verdict)
    live.close()
    served = len(llm_server.chat_requests)
    replay = LLMSession.replaying(recording, recorder.config, prompts=recorder.prompts)
    replay.output_modes = OutputModeMemory()
    result = await replay.generate(MODEL, "test/plain.j2", {"word": "x"}, Verdict)
    assert result.value == Verdict(score=4, reason="fine")
    assert result.call.output_mode == "json_object"
    assert len(llm_server.chat_requests) == served  # the replay never reached the server
