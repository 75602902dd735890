"""generate() through litellm's real HTTP path against the local server."""

import json
from collections.abc import Callable

import pytest
from pydantic import BaseModel, ValidationError

from sotopia_are.llm import GenerationError, LLMCall, LLMSession, Message, generate
from sotopia_are.llm.session import REPAIR_QUOTE_CHARS
from sotopia_are.llm.structured import schema_text
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"


class Verdict(BaseModel):
    score: int
    reason: str


async def test_text_output_sends_rendered_messages(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue("Hello there")
    session = make_session()
    result = await session.generate(MODEL, "test/ask.j2", {"persona": "Mara", "question": "Hi?"})
    assert result.value == "Hello there"
    [request] = llm_server.chat_requests
    assert request.messages == [
        {"role": "system", "content": "You are Mara."},
        {"role": "user", "content": "Hi?"},
    ]
    assert request.body["model"] == "test-model"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert result.call.raw_text == "Hello there" and result.call.parsed == "Hello there"
    assert session.calls == [result.call]


async def test_schema_output_is_sent_and_parsed(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue('{"score": 7, "reason": "kept the deal"}')
    session = make_session(output_mode="json_schema")
    result = await session.generate(
        MODEL, "test/ask.j2", {"persona": "a judge", "question": "Rate it."}, Verdict
    )
    assert result.value == Verdict(score=7, reason="kept the deal")
    assert result.call.parsed == {"score": 7, "reason": "kept the deal"}
    sent = llm_server.chat_requests[0].body["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["schema"] == Verdict.model_json_schema()
    # The provider enforces the schema, so the prompt carries no format instructions.
    assert llm_server.chat_requests[0].messages[-1]["content"] == "Rate it."


async def test_prompt_mode_puts_the_schema_in_the_last_user_message(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue('Sure! ```json\n{"score": 3, "reason": "meh"}\n``` Hope that helps.')
    session = make_session(output_mode="prompt")
    result = await session.generate(
        MODEL, "test/ask.j2", {"persona": "a judge", "question": "Rate it."}, Verdict
    )
    assert result.value.score == 3
    assert result.call.output_mode == "prompt"
    [request] = llm_server.chat_requests
    assert "response_format" not in request.body
    last = request.messages[-1]
    assert last["role"] == "user" and last["content"].startswith("Rate it.\n\n")
    assert json.dumps(Verdict.model_json_schema(), indent=2) in last["content"]
    assert len(request.messages) == 2


async def test_json_object_mode(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue('{"score": 1, "reason": "r"}')
    session = make_session(output_mode="json_object")
    result = await session.generate(MODEL, "test/plain.j2", {"word": "x"}, output_type=Verdict)
    assert result.value.score == 1
    assert llm_server.chat_requests[0].body["response_format"] == {"type": "json_object"}
    assert "JSON Schema" in llm_server.chat_requests[0].messages[-1]["content"]


async def test_malformed_output_is_repaired_with_the_error_shown(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue('{"score": "high"}', '{"score": 9, "reason": "fixed"}')
    session = make_session(output_attempts=3)
    result = await session.generate(MODEL, "test/plain.j2", {"word": "x"}, Verdict)
    assert result.value == Verdict(score=9, reason="fixed")
    first, second = llm_server.chat_requests
    assert second.messages[: len(first.messages)] == first.messages
    assert second.messages[-2] == {"role": "assistant", "content": '{"score": "high"}'}
    repair = second.messages[-1]["content"]
    assert repair.startswith("Your previous answer could not be used")
    assert "score" in repair and "reason: Field required" in repair
    call = result.call
    assert [a.error_kind for a in call.attempts] == ["invalid_output", None]
    assert call.attempts[0].raw_text == '{"score": "high"}'
    assert len(call.messages) == len(first.messages)  # the record keeps the first request's


async def test_output_that_never_validates_raises_with_every_attempt(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue("no json here", "[1, 2]", '{"score": 1}')
    session = make_session(output_attempts=3)
    with pytest.raises(GenerationError) as info:
        await session.generate(MODEL, "test/plain.j2", {"word": "x"}, Verdict)
    error = info.value
    assert [a.raw_text for a in error.attempts] == ["no json here", "[1, 2]", '{"score": 1}']
    assert all(a.error_kind == "invalid_output" and a.error for a in error.attempts)
    assert "no JSON object" in (error.attempts[0].error or "")
    assert "test-model" in str(error) and "Verdict" in str(error)
    assert error.call is not None and not error.call.ok
    assert error.call.parsed is None and error.call.error_type == "GenerationError"
    assert session.calls == [error.call]
    assert len(llm_server.chat_requests) == 3


async def test_module_level_generate_uses_the_given_session(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    session = make_session()
    result = await generate(MODEL, "test/plain.j2", {"word": "cheese"}, session=session)
    assert result.value == "Say cheese."  # the server echoes
    assert session.calls == [result.call]


async def test_env_vars_point_at_an_openai_compatible_server(
    llm_server: LocalLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOTOPIA_ARE_API_BASE", llm_server.url)
    monkeypatch.setenv("SOTOPIA_ARE_API_KEY", "sk-from-env")
    result = await generate(
        "openai/my-local-model", "llm/repair.j2", {"error": "e", "schema": "{}"}
    )
    assert result.value.startswith("Your previous answer")
    assert result.call.api_base == llm_server.url
    assert llm_server.chat_requests[0].headers["authorization"] == "Bearer sk-from-env"
    assert llm_server.chat_requests[0].body["model"] == "my-local-model"


async def test_params_are_sent(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    session = make_session(params={"temperature": 0.0, "max_tokens": 50})
    result = await session.generate(MODEL, "test/plain.j2", {"word": "x"}, params={"seed": 3})
    body = llm_server.chat_requests[0].body
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.0, 50, 3)
    assert result.call.params == {"temperature": 0.0, "max_tokens": 50, "seed": 3}


def test_the_server_serves_models_and_rejects_unknown_routes(llm_server: LocalLLMServer) -> None:
    import httpx

    # By default it plays any model and lists none; given model ids, it lists those.
    assert httpx.get(f"{llm_server.url}/models").status_code == 404
    assert httpx.get(f"{llm_server.url}/models/any-name").json()["id"] == "any-name"
    with LocalLLMServer(model_ids=("test-model",)) as listing:
        assert httpx.get(f"{listing.url}/models").json()["data"][0]["id"] == "test-model"
        assert httpx.get(f"{listing.url}/models/test-model").status_code == 200
        assert httpx.get(f"{listing.url}/models/other").status_code == 404
    assert httpx.get(f"{llm_server.base_url}/nowhere").status_code == 404
    assert httpx.post(f"{llm_server.url}/chat/completions", content=b"{oops").status_code == 400


async def test_every_attempt_records_the_messages_it_added(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    """A repaired call's whole exchange can be rebuilt from its record: the first request,
    then what each later request added (the rejected answer and the repair text)."""
    llm_server.enqueue(
        Reply.server_error(), "not json", '{"score": 11}', '{"score": 4, "reason": "ok"}'
    )
    session = make_session(output_mode="prompt", output_attempts=3)
    result = await session.generate(
        MODEL, "test/ask.j2", {"persona": "a judge", "question": "Rate it."}, Verdict
    )
    call = result.call
    kinds = [a.error_kind for a in call.attempts]
    assert kinds == ["transient", "invalid_output", "invalid_output", None]
    sent = [[Message(**m) for m in r.messages] for r in llm_server.chat_requests]
    assert len(call.attempts) == len(sent) == 4
    assert [call.sent_messages(a.number) for a in call.attempts] == sent
    assert call.messages == sent[0] and call.attempts[0].added_messages == []
    assert call.attempts[1].added_messages == []  # the same request, resent after a 500
    repair = call.attempts[2].added_messages
    assert repair[0] == Message(role="assistant", content="not json")
    assert repair[1].role == "user" and "could not be used" in repair[1].content
    # Without a response_format, the schema travels in the prompt, the repair's too.
    assert schema_text(Verdict) in repair[1].content
    assert LLMCall.model_validate_json(call.model_dump_json()) == call


async def test_asking_again_after_a_runaway_answer_quotes_only_its_start(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    """An answer cut off at max_tokens, quoted whole with the schema's text again, would
    take the request past a small server's context: the request asking again quotes its
    first REPAIR_QUOTE_CHARS characters, and under json_schema the schema only travels
    as the request's response_format. The record keeps the whole answer and what was sent."""
    runaway = '{"score": 7, "reason": "' + "and then " * 800  # never closed
    llm_server.enqueue(runaway, '{"score": 7, "reason": "kept the deal"}')
    session = make_session(output_mode="json_schema", output_attempts=2)
    result = await session.generate(MODEL, "test/plain.j2", {"word": "x"}, Verdict)
    assert result.value == Verdict(score=7, reason="kept the deal")
    first, second = llm_server.chat_requests
    assert second.messages[: len(first.messages)] == first.messages
    left_out = len(runaway) - REPAIR_QUOTE_CHARS
    quote = f"{runaway[:REPAIR_QUOTE_CHARS]}\n[... {left_out} more characters of this answer]"
    assert second.messages[-2] == {"role": "assistant", "content": quote}
    repair = second.messages[-1]["content"]
    assert repair == (
        "Your previous answer could not be used: the reply contains no JSON object\n\n"
        "Answer again with a single JSON object that conforms to the response format's "
        "JSON Schema, and nothing else."
    )
    assert second.body["response_format"] == first.body["response_format"]
    call = result.call
    assert call.attempts[0].raw_text == runaway
    assert call.attempts[1].added_messages[0] == Message(role="assistant", content=quote)
    assert call.sent_messages(2) == [Message(**m) for m in second.messages]


async def test_a_rejected_answer_within_the_quote_bound_is_quoted_whole(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    start = '{"score": "high", "reason": "'
    answer = start + "x" * (REPAIR_QUOTE_CHARS - len(start) - 2) + '"}'
    assert len(answer) == REPAIR_QUOTE_CHARS
    llm_server.enqueue(answer, '{"score": 7, "reason": "ok"}')
    session = make_session(output_mode="json_schema", output_attempts=2)
    await session.generate(MODEL, "test/plain.j2", {"word": "x"}, Verdict)
    assert llm_server.chat_requests[1].messages[-2] == {"role": "assistant", "content": answer}


async def test_parameters_that_are_not_json_are_refused_before_anything_is_sent(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    session = make_session()
    with pytest.raises(ValidationError):
        await session.generate(MODEL, "test/plain.j2", {"word": "x"}, params={"stop": {"a"}})
    assert llm_server.chat_requests == [] and session.calls == []


@pytest.mark.parametrize("transport", ["http", "litellm"])
async def test_a_calls_record_keeps_the_parameters_sent_over_either_transport(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], transport: str
) -> None:
    llm_server.enqueue('{"score": 3, "reason": "fine"}', '{"score": 4, "reason": "good"}')
    session = make_session(transport=transport, params={"extra_body": {"top_k": 5}})
    first = await session.generate(
        MODEL, "test/plain.j2", {"word": "x"}, Verdict, params={"seed": 7}
    )
    again = await session.generate(
        MODEL, "test/plain.j2", {"word": "x"}, Verdict, params={"seed": 7}
    )
    sent = [request.body for request in llm_server.chat_requests]
    assert sent[0] == sent[1] and sent[0]["seed"] == 7 and sent[0]["top_k"] == 5
    assert first.call.params == again.call.params
    assert first.call.params["response_format"] == sent[0]["response_format"]
    assert first.call.params["extra_body"] == {"top_k": 5} and first.call.params["seed"] == 7
