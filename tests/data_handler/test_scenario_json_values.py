"""Value encoding: every JSON value comes back equal and of the same type."""

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.simulation.data_handler.values import (
    OpaqueValue,
    decode_value,
    encode_value,
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def same(a: Any, b: Any) -> bool:
    """Equal and of exactly the same types all the way down (1 == 1.0 == True is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


@given(json_values)
def test_decode_inverts_encode(value: Any) -> None:
    text, value_type = encode_value(value)
    assert same(decode_value(text, value_type), value)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (None, (None, None)),
        ("", ("", "str")),
        (0, ("0", "int")),
        (False, ("False", "bool")),
        (0.1, ("0.1", "float")),
        ([], ("[]", "list")),
        ({"a": [1, None]}, ('{"a": [1, null]}', "dict")),
    ],
)
def test_encoding_is_what_are_writes(value: Any, encoded: tuple[str | None, str | None]) -> None:
    assert encode_value(value) == encoded


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ((1, 2), "tuple"),
        ({1, 2}, "set"),
        (float("nan"), "finite"),
        ([1, float("inf")], "[1]"),
        ({"a": {1: "x"}}, "dict key 1"),
        (object(), "object"),
    ],
)
def test_unrepresentable_values_are_refused(value: Any, words: str) -> None:
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        encode_value(value)


def test_are_python_syntax_containers_decode() -> None:
    decoded = decode_value("{'a': None, 'b': True, 'c': [1.5]}", "dict")
    assert decoded == {"a": None, "b": True, "c": [1.5]}


def test_unknown_types_survive_as_opaque_values() -> None:
    decoded = decode_value("From: a@b.c", "Email")
    assert isinstance(decoded, OpaqueValue) and decoded == "From: a@b.c"
    assert encode_value(decoded) == ("From: a@b.c", "Email")


@pytest.mark.parametrize(
    ("text", "value_type"),
    [("yes", "bool"), ("1.5", "int"), ("x", "float"), ("inf", "float"), ("{", "dict")],
)
def test_malformed_values_are_refused(text: str, value_type: str) -> None:
    with pytest.raises(ValueError):
        decode_value(text, value_type)


def test_a_null_type_means_text() -> None:
    assert decode_value("42", None) == "42"
