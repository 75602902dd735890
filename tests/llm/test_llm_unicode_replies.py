"""Text that is not valid Unicode in a model's reply — a lone surrogate (sent as a
``\\ud800`` JSON escape, in the reply's text or in the JSON the text holds) or a body that
is not UTF-8 — is a malformed answer, asked for again, on both transports; it never
reaches a record (where it failed the episode with ``PydanticSerializationError``)."""

import json
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import sotopia_are as sa
from sotopia_are.llm import LLMSession
from sotopia_are.llm.errors import MalformedReplyError
from sotopia_are.llm.structured import OutputValidationError, parse_reply
from sotopia_are.storage import EpisodeStore
from sotopia_are.testing import LocalLLMServer, Reply, schema_rule

MODEL = "openai/test-model"
TRANSPORTS = ["http", "litellm"]
LONE = "\ud800"


class Move(BaseModel):
    action: str
    steps: int


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_lone_surrogate_in_the_reply_text_is_asked_again(
    transport: str, llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    # The test server's json.dumps sends the surrogate as a \ud800 escape, as a server may.
    llm_server.enqueue(f"half an emoji: {LONE}", "fine")
    result = await make_session(transport=transport).generate(MODEL, "test/plain.j2", {"word": "x"})
    assert result.value == "fine"
    first, second = result.call.attempts
    assert first.error_kind == "transient" and "lone surrogate \\ud800" in (first.error or "")
    assert second.error is None
    json.loads(result.call.model_dump_json())  # the record can be written


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_lone_surrogate_in_the_answers_json_is_asked_again_with_the_reason(
    transport: str, llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue('{"action": "sit\\ud800", "steps": 1}', '{"action": "sit", "steps": 1}')
    result = await make_session(transport=transport).generate(
        MODEL, "test/plain.j2", {"word": "x"}, Move
    )
    assert result.value == Move(action="sit", steps=1)
    first, _second = result.call.attempts
    assert first.error_kind == "invalid_output"
    assert (
        first.error
        == "action: the text holds a lone surrogate (\\ud800), which is not valid Unicode"
    )
    # The repair request quoted the reason back to the model.
    assert "lone surrogate" in llm_server.chat_requests[-1].messages[-1]["content"]
    json.loads(result.call.model_dump_json())


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_body_that_is_not_utf8_is_a_malformed_reply(
    transport: str, llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    body = b'{"choices": [{"index": 0, "message": {"content": "caf\xe9"}}]}'
    llm_server.enqueue(Reply(body=body), "fine")
    result = await make_session(transport=transport).generate(MODEL, "test/plain.j2", {"word": "x"})
    assert result.value == "fine"
    assert "a body that is not UTF-8 text" in (result.call.attempts[0].error or "")


async def test_every_reply_bad_is_a_recorded_malformed_failure(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = lambda body: f"{LONE} again"
    with pytest.raises(MalformedReplyError, match="not valid Unicode") as raised:
        await make_session().generate(MODEL, "test/plain.j2", {"word": "x"})
    assert raised.value.call is not None
    json.loads(raised.value.call.model_dump_json())


# st.text never draws surrogates, whatever its alphabet: join drawn characters instead.
ANY_TEXT = st.lists(st.characters() | st.integers(0xD800, 0xDFFF).map(chr), max_size=20)


@given(ANY_TEXT.map("".join))
def test_a_parsed_answer_can_always_be_written(text: str) -> None:
    """Law: any string a model's JSON may carry (surrogates included) either parses into
    a value that serialises as JSON, or is an OutputValidationError."""
    reply = json.dumps({"action": text, "steps": 1})
    try:
        parsed = parse_reply(reply, Move)
    except OutputValidationError:
        assert any("\ud800" <= c <= "\udfff" for c in text)
        return
    assert Move.model_validate_json(parsed.value.model_dump_json()) == parsed.value


async def test_an_episode_with_a_surrogate_answer_completes_and_is_stored(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    spoiled = [0]

    def rule(body: object) -> str:
        answer = str(schema_rule(body))  # type: ignore[arg-type]
        if spoiled[0] < 2:  # the first agent's first answer, then the one asked again
            spoiled[0] += 1
            return answer.replace('"\\u2026"', '"\\ud800"') if spoiled[0] == 1 else answer + LONE
        return answer

    llm_server.rule = rule
    config = sa.LLMConfig(api_base=llm_server.url)
    spec = sa.EpisodeSpec(
        episode_id="surrogate-1",
        scenario="A bakery before closing.",
        agent_names=["Mara Quinn", "Teo Alvarez"],
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=2,
    )
    judge = sa.LLMJudge(MODEL, config=config)
    record = await sa.arun(spec, models=MODEL, judge=judge, store=store, config=config)
    assert record.status is sa.EpisodeStatus.COMPLETE and not record.failed_or_unrated
    errors = [a.error or "" for call in record.calls for a in call.attempts]
    assert any("lone surrogate" in e for e in errors)
    assert store.load(record.episode_id) == record
