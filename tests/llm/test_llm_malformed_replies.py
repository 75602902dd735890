"""A 200 that is not a chat completion — no choices, a choice without a message, a body
that is not JSON, a body cut off — is named as such (server, model, what was wrong) and
retried like a transient failure; never a bare IndexError or a parser traceback."""

import json
from collections.abc import Callable

import pytest

from sotopia_are.llm import LLMSession, TransientLLMError
from sotopia_are.llm.errors import MalformedReplyError
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"


def completion(**fields: object) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 1, **fields}).encode()


WHOLE = completion(choices=[{"index": 0, "message": {"role": "assistant", "content": "hi"}}])
MALFORMED = {
    "no choices": (Reply(body=completion(choices=[])), "a reply with no choices"),
    "no message": (
        Reply(body=completion(choices=[{"index": 0, "finish_reason": "stop"}])),
        "a reply whose first choice has no message",
    ),
    "not JSON": (Reply(body=b"<html>502 bad gateway</html>"), "a body that is not JSON"),
    "truncated": (Reply(body=WHOLE[: len(WHOLE) // 2]), "a truncated JSON body"),
}


@pytest.mark.parametrize("kind", list(MALFORMED))
async def test_a_malformed_reply_is_named_and_retried_then_a_transient_error(
    kind: str, llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    reply, named = MALFORMED[kind]
    llm_server.rule = lambda body: reply
    with pytest.raises(MalformedReplyError) as raised:
        await make_session().generate(MODEL, "test/plain.j2", {"word": "x"})
    message = str(raised.value)
    assert named in message and llm_server.url in message and repr(MODEL) in message
    assert "Traceback" not in message and isinstance(raised.value, TransientLLMError)
    # Retried as transient: every allowed attempt was made, and each is recorded.
    assert raised.value.call is not None
    attempts = raised.value.call.attempts
    assert len(llm_server.chat_requests) == len(attempts) == 4
    assert {a.error_kind for a in attempts} == {"transient"}
    assert all(named in (a.error or "") for a in attempts)


async def test_a_malformed_reply_then_a_good_one_succeeds(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(MALFORMED["no choices"][0], "fine")
    result = await make_session().generate(MODEL, "test/plain.j2", {"word": "x"})
    assert result.value == "fine"
    assert [a.error_kind for a in result.call.attempts] == ["transient", None]


async def test_a_real_server_error_is_not_called_malformed(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = lambda body: Reply.server_error(500)
    with pytest.raises(TransientLLMError) as raised:
        await make_session().generate(MODEL, "test/plain.j2", {"word": "x"})
    assert not isinstance(raised.value, MalformedReplyError)
    assert "not a chat completion" not in str(raised.value)
