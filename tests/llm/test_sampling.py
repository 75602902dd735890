"""Sampling settings as users write them (``temperature=0.7,seed=3``) and as they are sent:
what parses, what is refused with the item named, what a request carries, how settings
combine with the judge's default."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sotopia_are.llm import DEFAULT_JUDGE_SAMPLING, RESERVED_PARAMS, Sampling

NAMED = {"temperature", "top_p", "max_tokens", "seed"}
FINITE = st.floats(allow_nan=False, allow_infinity=False)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | FINITE | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
KEYS = st.from_regex(r"[a-z_][a-z0-9_]{0,11}", fullmatch=True).filter(
    lambda key: key not in NAMED | RESERVED_PARAMS
)
SAMPLINGS = st.builds(
    Sampling,
    temperature=st.none() | st.floats(min_value=0, max_value=2),
    top_p=st.none() | st.floats(min_value=0, max_value=1, exclude_min=True),
    max_tokens=st.none() | st.integers(min_value=1, max_value=10**6),
    seed=st.none() | st.integers(),
    extra=st.dictionaries(KEYS, JSON, max_size=3),
)


def test_the_documented_example_parses_into_settings_and_pass_through() -> None:
    sampling = Sampling.parse("temperature=0.7,top_p=0.9,seed=3,presence_penalty=0.1")
    assert sampling == Sampling(temperature=0.7, top_p=0.9, seed=3, extra={"presence_penalty": 0.1})
    assert sampling.params() == {
        "temperature": 0.7, "top_p": 0.9, "seed": 3, "presence_penalty": 0.1
    }  # fmt: skip


def test_nothing_given_sends_nothing_so_the_provider_decides() -> None:
    assert Sampling.parse("") == Sampling() and Sampling().params() == {}
    assert Sampling.parse(" , ") == Sampling()  # stray separators, e.g. a trailing comma


def test_values_are_json_so_lists_objects_and_strings_pass_through() -> None:
    sampling = Sampling.parse(
        'stop=["\\n\\n", "END"], extra_body={"top_k": 20, "min_p": 0.05}, logprobs=true, '
        "reasoning_effort=low"
    )
    assert sampling.extra == {
        "stop": ["\n\n", "END"],
        "extra_body": {"top_k": 20, "min_p": 0.05},
        "logprobs": True,
        "reasoning_effort": "low",  # a bare word is text
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("temperature=2.5", "temperature: Input should be less than or equal to 2"),
        ("top_p=0", "top_p: Input should be greater than 0"),
        ("max_tokens=0", "max_tokens: Input should be greater than or equal to 1"),
        ("seed=1.5", "seed: Input should be a valid integer"),
        ("temperature=warm", "temperature: Input should be a valid number"),
        ("temperature=true", "temperature: Input should be a valid number"),
        ("temperature=NaN", "temperature: Input should be a finite number"),
        ("seed", "sampling item 'seed' is not key=value"),
        ("seed=", "sampling item 'seed' has no value"),
        ("top p=0.9", "sampling item 'top p=0.9': 'top p' is not a parameter name"),
        ("seed=1,seed=2", "sampling item 'seed' is given twice"),
        ("model=gpt-4o", "'model' is set by sotopia_are itself"),
        ("response_format={}", "'response_format' is set by sotopia_are itself"),
    ],
)
def test_a_bad_item_is_refused_naming_it(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Sampling.parse(text)


@pytest.mark.parametrize("key", ["temperature", "seed", "messages", "stream", "n"])
def test_pass_through_cannot_shadow_settings_or_request_plumbing(key: str) -> None:
    with pytest.raises(ValueError, match=repr(key)):
        Sampling(extra={key: 1})


def test_the_answer_budget_is_a_setting_and_is_sent() -> None:
    assert Sampling(max_tokens=64).params() == {"max_tokens": 64}


def test_given_settings_override_the_judges_default_and_keep_the_rest() -> None:
    assert Sampling(temperature=0.0) == DEFAULT_JUDGE_SAMPLING
    seeded = DEFAULT_JUDGE_SAMPLING | Sampling.parse("seed=3")
    assert seeded.params() == {"temperature": 0.0, "seed": 3}
    # null gives a setting back to the provider.
    assert (DEFAULT_JUDGE_SAMPLING | Sampling.parse("temperature=null")).params() == {}
    both = Sampling(extra={"a": 1, "b": 2}).merged(Sampling(extra={"b": 3}))
    assert both.extra == {"a": 1, "b": 3}


@given(SAMPLINGS)
@settings(max_examples=200)
def test_written_settings_parse_back_to_the_same(sampling: Sampling) -> None:
    assert Sampling.parse(str(sampling)) == sampling
