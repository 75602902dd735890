"""The body of a request over the HTTP transport: what a sender writes of parts (the
model's, each message's, the parameters' kept per output type) is the JSON of the whole
request, byte for byte, however often the same parts are sent."""

import json
from typing import Any

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sotopia_are.llm.config import LLMConfig
from sotopia_are.llm.http_transport import Sender, _body, _text_json
from sotopia_are.llm.request import Message
from sotopia_are.llm.session import _request

ENDPOINT = LLMConfig(api_base="http://127.0.0.1:9/v1").endpoint("openai/m")
FORMATS: list[dict[str, Any]] = [
    {"type": "json_object"},
    {"type": "json_schema", "json_schema": {"a": [1, "…"]}},
]

texts = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
messages = st.lists(
    st.builds(Message, role=st.sampled_from(["system", "user", "assistant"]), content=texts),
    min_size=1,
    max_size=4,
)
floats = st.floats(allow_nan=False, allow_infinity=False)
# Equal values written apart (1, 1.0, True; 0.0, -0.0) are drawn often.
values = st.sampled_from([0, 1, True, False, 1.0, 0.0, -0.0, "1"]) | floats | texts | st.none()
plain_params = st.dictionaries(st.sampled_from(["max_tokens", "temperature", "seed"]), values)


@settings(max_examples=200)
@given(
    requests=st.lists(
        st.tuples(messages, plain_params, st.sampled_from([None, 0, 1])), min_size=1, max_size=6
    )
)
def test_a_body_is_the_json_of_the_whole_request(
    requests: list[tuple[list[Message], dict[str, Any], int | None]],
) -> None:
    sender = Sender(ENDPOINT)
    system = Message(role="system", content="the same system message, sent again")
    for sent, params, format_index in requests:
        if format_index is not None:  # the same object, request after request
            params = {**params, "response_format": FORMATS[format_index]}
        # As a session makes it: the parameters kept as they are, not copied.
        request = _request("openai/m", [system, *sent], params, ENDPOINT)
        body = sender._body(request)
        assert body == _body(request, {})[0]
        assert json.loads(body) == {
            "model": "m",
            "messages": [m.model_dump() for m in request.messages],
            **request.params,
        }


def test_equal_parameters_written_apart_are_kept_apart() -> None:
    # 1, 1.0 and True are equal (and hash alike), as are 0.0 and -0.0, but each is written
    # its own way; a sender that kept one's body part for the other would send the wrong one.
    sender = Sender(ENDPOINT)
    system = Message(role="system", content="s")
    for value in [1, 1.0, True, 1, 0.0, -0.0, 0, False, 0.0]:
        request = _request(
            "openai/m", [system], {"seed": value, "response_format": FORMATS[0]}, ENDPOINT
        )
        assert sender._body(request) == _body(request, {})[0]


def test_a_system_text_sent_in_another_role_is_written_in_that_role() -> None:
    # A sender keeps a system message's whole part by its text's identity: the same text
    # object in a user or assistant message must still be written with its own role.
    sender = Sender(ENDPOINT)
    text = "the system text, sent again as another role's"
    system = Message(role="system", content=text)
    for role in ["user", "assistant", "system"]:
        other = Message.model_construct(role=role, content=text)
        assert other.content is text
        request = _request("openai/m", [system, other], {}, ENDPOINT)
        assert sender._body(request) == _body(request, {})[0]
        assert json.loads(sender._body(request))["messages"][1]["role"] == role


# Every character class, the escaped ones (control characters, quotes, backslashes) and
# lone surrogates (which neither encoder takes) drawn often.
any_texts = st.text(
    alphabet=st.characters(codec=None)
    | st.sampled_from('"\\\x00\x1f\x7f\n\r\t\b\f/\u2028…😀\ud800\udfff'),
    max_size=60,
)


@settings(max_examples=1000)
@given(text=any_texts)
def test_a_text_is_written_as_pydantic_core_writes_it(text: str) -> None:
    try:
        expected = pydantic_core.to_json(text)
    except pydantic_core.PydanticSerializationError as refused:
        with pytest.raises(pydantic_core.PydanticSerializationError) as raised:
            _text_json(text)
        assert str(raised.value) == str(refused)
        return
    assert _text_json(text) == expected


def test_every_character_is_written_as_pydantic_core_writes_it() -> None:
    for code in [*range(0x800), *range(0xE000, 0x10000, 7), *range(0x10000, 0x110000, 997)]:
        text = f"a{chr(code)}b"
        assert _text_json(text) == pydantic_core.to_json(text), hex(code)


class _Text(str):
    """A str subclass (a caller's text may be one)."""


def test_a_str_subclass_is_written_as_its_text() -> None:
    text = _Text('a "quoted" line\n…')
    assert _text_json(text) == pydantic_core.to_json(text) == pydantic_core.to_json(str(text))
