"""Reply parsing: tolerant of fences and prose, strict about content."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from sotopia_are.llm.structured import OutputValidationError, extract_json, parse_output


class Verdict(BaseModel):
    score: int
    reason: str


@pytest.mark.parametrize(
    "text",
    [
        '{"score": 1, "reason": "r"}',
        '```json\n{"score": 1, "reason": "r"}\n```',
        '```\n{"score": 1, "reason": "r"}```',
        'Here you go:\n{"score": 1, "reason": "r"}\nAnything else?',
        'I think {so} but: {"score": 1, "reason": "r"}',
    ],
)
def test_wrapped_replies_parse(text: str) -> None:
    assert parse_output(text, Verdict) == Verdict(score=1, reason="r")


def test_invalid_content_is_an_error_not_a_default() -> None:
    with pytest.raises(OutputValidationError, match="no JSON object"):
        parse_output("I refuse.", Verdict)
    with pytest.raises(OutputValidationError, match=r"score: Input should be a valid integer"):
        parse_output('{"score": "high", "reason": "r"}', Verdict)
    with pytest.raises(OutputValidationError, match=r"reason: Field required"):
        parse_output('{"score": 2}', Verdict)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=10,
)


@given(
    st.dictionaries(st.text(), json_values, min_size=1),
    st.text(alphabet=st.characters(blacklist_characters="{}[]`")),
    st.booleans(),
)
def test_any_object_is_recovered_from_prose_or_fences(
    value: dict[str, object], prose: str, fenced: bool
) -> None:
    body = json.dumps(value)
    text = f"{prose}\n```json\n{body}\n```\n{prose}" if fenced else f"{prose} {body} {prose}"
    assert extract_json(text) == value
