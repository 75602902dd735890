"""Every call yields an LLMCall record; records sum into Usage; both round-trip JSON."""

import functools
import operator
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from sotopia_are.llm import LLMCall, LLMSession, TransientLLMError, Usage
from sotopia_are.llm.accounting import Attempt, UsageTally
from sotopia_are.llm.request import Message
from sotopia_are.testing import LocalLLMServer, Reply


class Move(BaseModel):
    action: str


async def test_records_carry_tokens_cost_latency_and_attempts(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(
        Reply(content="fine thanks", prompt_tokens=100, completion_tokens=20),
        Reply.server_error(),
        Reply(content='{"action": "wave"}', prompt_tokens=50, completion_tokens=5),
    )
    session = make_session()
    text = await session.generate("openai/test-model", "test/plain.j2", {"word": "hi"})
    move = await session.generate("openai/gpt-4o-mini", "test/plain.j2", {"word": "go"}, Move)
    call = text.call
    assert (call.prompt_tokens, call.completion_tokens) == (100, 20)
    assert call.cost_usd is None  # litellm has no price for test-model: unknown, not 0
    assert call.latency_s > 0 and call.messages[0].content == "Say hi."
    priced = move.call
    assert priced.cost_usd is not None and priced.cost_usd > 0  # litellm knows gpt-4o-mini
    assert [a.error_kind for a in priced.attempts] == ["transient", None]
    assert priced.attempts[0].raw_text is None and priced.attempts[0].cost_usd is None

    usage = session.usage()
    assert usage == Usage.of([call, priced])
    assert (usage.calls, usage.failed_calls, usage.requests) == (2, 0, 3)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (150, 25, 175)
    assert usage.cost_usd == priced.cost_usd and usage.unpriced_calls == 1

    for record in (call, priced):
        assert LLMCall.model_validate_json(record.model_dump_json()) == record
    assert Usage.model_validate_json(usage.model_dump_json()) == usage


async def test_failed_calls_are_recorded_and_counted(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = lambda _request: Reply.server_error()
    session = make_session()
    with pytest.raises(TransientLLMError):
        await session.generate("openai/test-model", "test/plain.j2", {"word": "x"})
    [call] = session.calls
    assert not call.ok and call.error and call.raw_text is None and call.parsed is None
    assert call.cost_usd is None and call.prompt_tokens is None
    assert Usage.of(session.calls).failed_calls == 1
    assert Usage.of(session.calls).unpriced_calls == 0


def test_usage_sums_per_episode_and_per_batch() -> None:
    episode_a = Usage(calls=2, requests=3, prompt_tokens=10, completion_tokens=5, cost_usd=0.5)
    episode_b = Usage(calls=1, requests=1, prompt_tokens=7, completion_tokens=1, unpriced_calls=1)
    batch = Usage.total([episode_a, episode_b])
    assert batch == episode_a + episode_b
    assert (batch.calls, batch.requests, batch.total_tokens) == (3, 4, 23)
    assert batch.cost_usd == 0.5 and batch.unpriced_calls == 1
    assert Usage.total([]) == Usage() and Usage().cost_usd is None


counts = st.integers(min_value=0, max_value=10**9)
usages = st.builds(
    Usage,
    calls=counts,
    failed_calls=counts,
    requests=counts,
    prompt_tokens=counts,
    completion_tokens=counts,
    cost_usd=st.none() | st.floats(min_value=0, max_value=1e4, allow_nan=False),
    unpriced_calls=counts,
    latency_s=st.floats(min_value=0, max_value=1e5, allow_nan=False),
    normalized_calls=counts,
    repaired_calls=counts,
)


@given(st.lists(usages, max_size=30))
def test_a_total_is_the_sum_added_in_order_to_the_last_bit(parts: list[Usage]) -> None:
    # Stored totals are compared with totals computed again on read: equal means equal.
    assert Usage.total(parts) == functools.reduce(operator.add, parts, Usage())


texts = st.text(max_size=20)
attempts = st.builds(
    Attempt,
    number=st.integers(1, 5),
    added_messages=st.lists(
        st.builds(Message, role=st.sampled_from(["user", "assistant"]), content=texts), max_size=2
    ),
    source=st.sampled_from(["network", "cache", "replay"]),
    latency_s=st.floats(0, 100, allow_nan=False),
    queued_s=st.floats(0, 100, allow_nan=False),
    raw_text=st.none() | texts,
    prompt_tokens=st.none() | counts,
    completion_tokens=st.none() | counts,
    cost_usd=st.none() | st.floats(0, 10, allow_nan=False),
    error=st.none() | texts,
    error_kind=st.none() | st.sampled_from(["transient", "invalid_output"]),
    normalized=st.lists(texts, max_size=2),
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,  # JSON has no infinity: a record holds JSON
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


@given(
    st.lists(attempts, max_size=3),
    st.dictionaries(texts, json_values, max_size=3),
    json_values,
    st.none() | texts,
)
def test_a_record_of_valid_parts_is_the_validated_record(
    tries: list[Attempt], params: dict[str, Any], parsed: Any, error: str | None
) -> None:
    fields: dict[str, Any] = {
        "model": "openai/m",
        "api_base": "http://127.0.0.1:1/v1",
        "scope": "episode/Alice",
        "template": "t.j2",
        "output_type": "AgentAction",
        "output_mode": "json_schema",
        "messages": [Message(role="user", content="hi")],
        "params": params,
        "latency_s": 0.25,
        "raw_text": "{}",
        "parsed": parsed,
        "error": error,
        "error_type": None if error is None else "GenerationError",
    }
    built = LLMCall.of_valid_parts(tries, **fields)
    validated = LLMCall.from_attempts(tries, **fields)
    assert built == validated
    assert built.model_dump_json() == validated.model_dump_json()
    assert built.model_fields_set == set(LLMCall.model_fields)  # every field given
    assert LLMCall.model_validate_json(built.model_dump_json()) == validated


@given(
    st.lists(st.tuples(st.lists(attempts, min_size=1, max_size=3), st.none() | texts), max_size=20)
)
def test_a_tally_adds_calls_as_usages_add(tries: list[tuple[list[Attempt], str | None]]) -> None:
    calls = [
        LLMCall.from_attempts(
            a, model="m", template="t", messages=[], latency_s=0.5 * n, error=error
        )
        for n, (a, error) in enumerate(tries)
    ]
    tally = UsageTally()
    for call in calls:
        tally.add_call(call)
    added = functools.reduce(operator.add, map(Usage.of_call, calls), Usage())
    assert tally.usage() == added == Usage.of(calls)
