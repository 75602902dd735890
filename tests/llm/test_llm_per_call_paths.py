"""The LLM layer's per-call shortcuts say what the general forms they replace say."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from sotopia_are.llm import price_table
from sotopia_are.llm.accounting import Attempt, LLMCall
from sotopia_are.llm.request import LLMRequest, LLMResponse, Message
from sotopia_are.llm.session import _answered
from sotopia_are.llm.structured import OutputValidationError, extract_json, parse_reply
from sotopia_are.llm.valid_parts import of_valid_fields

texts = st.text(max_size=20)
counts = st.integers(0, 10**6)
attempts = st.builds(
    Attempt,
    number=st.integers(1, 5),
    latency_s=st.floats(0, 100, allow_nan=False),
    raw_text=st.none() | texts,
    prompt_tokens=st.none() | counts,
    completion_tokens=st.none() | counts,
    cost_usd=st.none() | st.floats(0, 10, allow_nan=False),
)


@given(st.lists(attempts, max_size=5))
def test_a_records_totals_are_the_sums_of_its_attempts(tries: list[Attempt]) -> None:
    """Law: tokens sum the attempts that report them (None if none does); the cost sums
    the answered attempts' costs, None if one is unknown or none answered; the same
    numbers, to the last bit, as sum() gives."""
    call = LLMCall.of_valid_parts(
        tries,
        model="m",
        api_base=None,
        scope=None,
        template="t.j2",
        output_type=None,
        output_mode=None,
        messages=[],
        params={},
        latency_s=0.5,
    )
    prompt = [a.prompt_tokens for a in tries if a.prompt_tokens is not None]
    completion = [a.completion_tokens for a in tries if a.completion_tokens is not None]
    answered = [a for a in tries if a.raw_text is not None]
    costs = [a.cost_usd for a in answered]
    cost = sum(c for c in costs if c is not None) if answered and None not in costs else None
    assert call.prompt_tokens == (sum(prompt) if prompt else None)
    assert call.completion_tokens == (sum(completion) if completion else None)
    assert repr(call.cost_usd) == repr(cost)


@given(
    st.integers(1, 5),
    st.lists(st.builds(Message, role=st.just("user"), content=texts), max_size=2),
    st.sampled_from(["network", "cache", "replay"]),
    st.floats(0, 100, allow_nan=False),
    st.floats(0, 100, allow_nan=False),
    st.builds(
        LLMResponse,
        text=texts,
        prompt_tokens=st.none() | counts,
        completion_tokens=st.none() | counts,
        cost_usd=st.none() | st.floats(0, 10, allow_nan=False),
        service_s=st.none() | st.floats(0, 10, allow_nan=False),
    ),
    st.none() | st.lists(texts, max_size=2),
)
def test_an_attempt_of_valid_parts_is_the_validated_attempt(
    number: int,
    added: list[Message],
    source: Any,
    latency: float,
    queued: float,
    response: LLMResponse,
    normalized: list[str] | None,
) -> None:
    fields = _answered(
        number=number,
        added_messages=added,
        source=source,
        latency_s=latency,
        queued_s=queued,
        response=response,
    )
    if normalized is not None:
        fields["normalized"] = normalized
    else:
        fields["error"], fields["error_kind"] = "bad", "invalid_output"
    built = of_valid_fields(Attempt, fields)
    validated = Attempt.model_validate(dict(fields))
    assert built == validated
    assert built.model_dump_json() == validated.model_dump_json()
    assert list(vars(built)) == list(Attempt.model_fields)  # the model's order


@given(st.sampled_from(["system", "user", "assistant"]), texts, st.lists(texts, max_size=3))
def test_models_of_valid_fields_are_the_validated_models(
    role: Any, content: str, params: list[str]
) -> None:
    pairs: list[tuple[type[BaseModel], dict[str, Any]]] = [
        (Message, {"role": role, "content": content}),
        (
            LLMRequest,
            {
                "model": "openai/m",
                "messages": (Message(role=role, content=content),),
                "params": {"stop": params},
            },
        ),
    ]
    for cls, fields in pairs:
        built = of_valid_fields(cls, dict(fields))
        validated = cls.model_validate(fields)
        assert built == validated
        assert built.model_dump_json() == validated.model_dump_json()
        assert built.model_fields_set == validated.model_fields_set


class Said(BaseModel):
    text: str


# st.text never draws surrogates, whatever its alphabet: join drawn characters instead.
ANY_TEXT = st.lists(st.characters() | st.integers(0xD800, 0xDFFF).map(chr), max_size=12)


@given(ANY_TEXT.map("".join), st.booleans(), st.booleans())
def test_a_lone_surrogate_is_refused_however_the_reply_writes_it(
    text: str, ascii_only: bool, escape_case: bool
) -> None:
    """Law: a reply is refused exactly when its value holds a lone surrogate, whether the
    reply escapes it (in either case of hex digits) or writes it as it is; other escapes
    (``\\u2026``) change nothing."""
    reply = json.dumps({"text": text}, ensure_ascii=ascii_only)
    if escape_case:
        reply = reply.replace("\\ud", "\\uD")
    read = json.loads(reply)["text"]  # json joins the escapes of a real pair
    lone = any("\ud800" <= c <= "\udfff" for c in read)
    try:
        parsed = parse_reply(reply, Said)
    except OutputValidationError as refused:
        assert lone and "lone surrogate" in str(refused)
        return
    assert not lone and parsed.value.text == read


@given(st.dictionaries(texts, texts, max_size=3), st.sampled_from(["", " \n", "```json\n"]))
def test_the_json_of_a_reply_is_read_whole_or_fenced(value: dict[str, str], before: str) -> None:
    text = json.dumps(value)
    reply = f"{before}{text}\n```" if before.startswith("```") else f"{before}{text}"
    assert extract_json(reply) == value


def _price_from_the_whole_table(model: str) -> tuple[float, float] | None:
    # The lookup before the shortcut: the whole table parsed, the same three keys tried.
    text = price_table._price_file()
    assert text is not None
    table = json.loads(text)
    name, provider = price_table.wire_model(model), price_table.provider_of(model)
    for key in (name, model, f"{provider}/{name}" if provider else name):
        entry = table.get(key)
        if isinstance(entry, dict) and entry.get("mode", "chat") == "chat":
            given, taken = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
            if isinstance(given, int | float) and isinstance(taken, int | float):
                return float(given), float(taken)
    return None


@pytest.mark.parametrize(
    "model",
    [
        "openai/gpt-4o-mini",
        "gpt-4o-mini",
        "openai/bench-model",
        "hosted_vllm/Qwen/Qwen2.5-7B",
        "claude-haiku-5-5",  # a key the table's hand edits left at column 0
        "azure_ai/model_router",
        "text-embedding-3-small",  # named, but no chat model: no price
        "openai/claude-haiku-latest",  # only an alias's value
    ],
)
def test_a_price_is_the_whole_tables_price(model: str) -> None:
    """A model's price is the one the whole parsed table gives, whether or not the
    table is parsed (it is not when the table names no key tried)."""
    assert price_table._price.__wrapped__(model) == _price_from_the_whole_table(model)


def test_a_model_the_table_never_names_is_priced_without_parsing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def parse(_text: bytes) -> None:
        raise AssertionError("the table was parsed")

    monkeypatch.setattr(price_table, "_parsed", parse)
    assert price_table._price.__wrapped__("openai/bench-model") is None


@pytest.mark.parametrize(
    ("text", "may"),
    [
        (b'{"x": {"input_cost_per_token": 1}}', False),
        (b'{"ab": {}}', True),
        (b'{"x": {"ab": 1}}', True),  # named, if not at the top: parsed to be sure
        (b'{"a\\u0062": {}}', True),  # "ab" escaped: not seen in the bytes
        (b'{"a\\/b": {}}', True),
        ('{"ab": {}}'.encode("utf-16"), True),
    ],
)
def test_the_table_may_name_a_key_unless_its_bytes_show_it_does_not(text: bytes, may: bool) -> None:
    assert price_table._may_name(text, ("ab", "a/b")) is may
