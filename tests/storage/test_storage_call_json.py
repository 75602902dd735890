"""A call record's stored JSON (``call_json``, orjson where it writes the same) is its
model's ``model_dump_json()`` byte for byte, with the same errors: for records built by
validation, and for records ``model_construct`` filled with values of any type."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import enum
import uuid
import warnings
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sotopia_are.llm import LLMCall
from sotopia_are.llm.accounting import Attempt
from sotopia_are.llm.request import Message
from sotopia_are.storage import call_json as call_json_module
from sotopia_are.storage.call_json import call_json

# Texts with what each writer escapes or refuses: quotes, backslashes, control
# characters, U+2028, non-ASCII, an emoji, lone surrogates.
TEXT = st.text(
    st.characters(codec=None) | st.sampled_from('"\\\x00\x1f\x7f\n\u2028…😀\ud800\udfff'),
    max_size=12,
)
FLOAT = st.floats() | st.sampled_from([1e16, 1e-05, 5e-324, 1.5e300, -0.0, 0.1])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | FLOAT | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=12,
)
MESSAGES = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user"]), "content": TEXT}),
    max_size=2,
)
ATTEMPT = st.fixed_dictionaries(
    {
        "number": st.integers(1, 3),
        "latency_s": FLOAT,
        "queued_s": FLOAT,
        "added_messages": MESSAGES,
        "source": st.sampled_from(["network", "cache"]),
    },
    optional={
        "service_s": st.none() | FLOAT,
        "raw_text": st.none() | TEXT,
        "prompt_tokens": st.none() | st.integers(0, 2**70),
        "cost_usd": st.none() | FLOAT,
        "error_kind": st.sampled_from(["transient", None]),
        "normalized": st.lists(TEXT, max_size=2),
    },
)
CALL = st.fixed_dictionaries(
    {
        "model": TEXT,
        "template": TEXT,
        "messages": MESSAGES,
        "latency_s": FLOAT,
        "params": st.dictionaries(TEXT, JSON, max_size=4),
        "parsed": JSON,
    },
    optional={
        "scope": st.none() | TEXT,
        "raw_text": st.none() | TEXT,
        "prompt_tokens": st.none() | st.integers(0, 2**70),
        "completion_tokens": st.none() | st.integers(0, 100),
        "cost_usd": st.none() | FLOAT,
        "attempts": st.lists(ATTEMPT, max_size=2),
        "error": st.none() | TEXT,
    },
)


def _same(call: LLMCall) -> None:
    """``call_json(call)`` is the model's JSON, or raises the model's error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (pydantic-core's, on values of another type)
        try:
            expected = call.model_dump_json().encode()
        except Exception as error:  # whichever the model raises
            with pytest.raises(type(error)) as raised:
                call_json(call)
            assert str(raised.value) == str(error)
            return
        assert call_json(call) == expected


@settings(max_examples=300)
@given(CALL)
def test_a_validated_call_is_written_as_its_model_writes_it(data: dict[str, Any]) -> None:
    _same(LLMCall.model_validate(data))


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Text(str):
    pass


@dataclasses.dataclass
class Point:
    x: int = 1


# Values of every kind a model_construct lets into any field.
ODD = st.sampled_from(
    [
        True,
        False,
        1,
        0,
        -(2**63),
        2**64 - 1,
        2**64,
        1.0,
        float("nan"),
        float("inf"),
        None,
        "x",
        Text("x"),
        collections.OrderedDict(k=1),
        (1, "a"),
        [1, (2,)],
        {"k": (1,)},
        {1: 2},
        Colour.RED,
        Level.HIGH,
        uuid.UUID(int=7),
        datetime.date(2020, 1, 2),
        datetime.datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=datetime.UTC),
        Point(),
        b"bytes",
        {1, 2},
        Message(role="user", content="hi"),
        Message.model_construct(role="user", content=2),
        Attempt(number=1, latency_s=0.5),
        Attempt.model_construct(number=True, latency_s=1, queued_s=0.0),
        LLMCall(model="m", template="t", messages=[], latency_s=1.0),
    ]
)


@settings(max_examples=400)
@given(data=CALL, odd=st.dictionaries(st.sampled_from(list(LLMCall.model_fields)), ODD))
def test_a_constructed_call_holding_anything_is_written_as_its_model_writes_it(
    data: dict[str, Any], odd: dict[str, Any]
) -> None:
    valid = LLMCall.model_validate(data)
    _same(LLMCall.model_construct(**{**valid.__dict__, **odd}))


@given(data=CALL, odd=st.dictionaries(st.sampled_from(list(Attempt.model_fields)), ODD))
def test_a_call_with_an_attempt_holding_anything_is_written_as_its_model_writes_it(
    data: dict[str, Any], odd: dict[str, Any]
) -> None:
    valid = LLMCall.model_validate(data)
    attempt = Attempt.model_construct(**{**Attempt(number=1, latency_s=0.5).__dict__, **odd})
    _same(valid.model_copy(update={"attempts": [attempt]}))


def test_missing_and_subclassed_records_are_written_as_their_models_write_them() -> None:
    _same(LLMCall.model_construct(model="m", template="t"))  # no latency_s, no messages

    class Call(LLMCall):
        note: str = "more"

    _same(Call(model="m", template="t", messages=[], latency_s=1.0))

    class Said(Message):
        note: str = "more"

    said = [Said(role="user", content="x")]
    _same(LLMCall(model="m", template="t", messages=said, latency_s=1.0))


def test_the_call_records_models_are_written_by_orjson() -> None:
    # A field of a new kind (or an alias, a serializer...) turns the fast way off for
    # every call: the laws above still hold, and this says why the store got slower.
    assert set(call_json_module._CHECKS) == {LLMCall, Attempt, Message}
    # And the fast way is taken for a validated call, not declined for every one.
    call = LLMCall(
        model="m",
        template="t",
        messages=[Message(role="user", content="x")],
        attempts=[Attempt(number=1, latency_s=0.5, error="e", error_kind="transient")],
        latency_s=1.0,
    )
    fields_of, options = call_json_module._fields_of, call_json_module._OPTIONS
    written = orjson.dumps(fields_of(call), default=fields_of, option=options)
    assert written == call.model_dump_json().encode()
