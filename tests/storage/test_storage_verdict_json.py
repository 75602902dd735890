"""`verdict_json` is a verdict's ``model_dump(mode="json")``: key for key in the same order,
value for value of the same types, with the same warnings, whatever the verdict holds in
its calls' free-form JSON (``params``, ``parsed``): JSON of every kind (non-finite floats,
70-bit integers, any text), or values a validated call cannot hold (put there by
``model_construct``), which ``JsonValue`` dumps with a warning or refuses."""

from __future__ import annotations

import dataclasses
import enum
import warnings
from collections import OrderedDict
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue, TypeAdapter
from test_storage_export_lines import JSON, TEXT
from test_storage_steps import verdicts

from sotopia_are.llm import LLMCall
from sotopia_are.record import Verdict
from sotopia_are.storage.store import verdict_json as module
from sotopia_are.storage.store.verdict_json import verdict_json


def shape(value: Any) -> Any:
    """``value`` with every type and every dict's key order made part of it (``==`` of
    two dicts ignores their order; of 1, 1.0 and True, their type; of NaN, everything)."""
    if isinstance(value, dict):
        return ("dict", type(value), [(shape(k), shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", type(value), [shape(v) for v in value])
    return (type(value), repr(value))


def dumped(dump: Callable[[], Any]) -> tuple[Any, list[str]]:
    """What ``dump`` gives (its shape, or the error it raises) and the warnings it gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = shape(dump())
        except Exception as error:  # the same error, either way
            result = (type(error), str(error))
    return result, [str(w.message) for w in caught]


class Text(str):
    pass


class Number(int):
    pass


class Real(float):
    pass


class Colour(enum.Enum):
    RED = "red"


class Size(enum.IntEnum):
    BIG = 2


class Name(enum.StrEnum):
    ADA = "ada"


class Mapping(dict[str, Any]):
    pass


class Items(list[Any]):
    pass


@dataclasses.dataclass
class Point:
    x: int


@dataclasses.dataclass(eq=False)
class Touchy:
    """Compared with anything, it raises."""

    x: int

    def __eq__(self, other: object) -> bool:
        raise LookupError("not comparable")

    __hash__ = object.__hash__


class Unknown:
    pass


SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | TEXT
    | st.builds(Text, TEXT)
    | st.builds(Number, st.integers())
    | st.builds(Real, st.floats())
    | st.sampled_from([Colour.RED, Size.BIG, Name.ADA, b"bytes", date(2020, 1, 2)])
    | st.builds(Decimal, st.integers())
    | st.builds(Point, st.integers())
    | st.builds(Touchy, st.integers())
    | st.builds(Unknown)
)
ANY = st.recursive(
    SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.lists(inner, max_size=3).map(Items)
        | st.dictionaries(TEXT, inner, max_size=3)
        | st.dictionaries(TEXT, inner, max_size=3).map(Mapping)
        | st.dictionaries(TEXT, inner, max_size=3).map(OrderedDict)
        | st.dictionaries(st.integers(-3, 3), inner, max_size=2)
        | st.frozensets(st.integers(), max_size=2)
    ),
    max_leaves=8,
)
"""Anything: JSON, its subclasses and enums, and what is not JSON at all."""


@settings(max_examples=400, deadline=None)
@given(value=ANY)
def test_a_value_copied_is_what_json_value_dumps_without_a_warning(value: Any) -> None:
    """Whatever the value, ``_json_copy`` either declines it or gives what ``JsonValue``'s
    dump gives, and then that dump gives no warning."""
    copied = module._json_copy(value)
    if copied is module._NOT_PLAIN:
        return
    expected = dumped(lambda: TypeAdapter(JsonValue).dump_python(value, mode="json"))
    assert (shape(copied), []) == expected


@settings(max_examples=200, deadline=None)
@given(value=JSON)
def test_json_is_copied_not_declined(value: JsonValue) -> None:
    """JSON (NaN, infinities, 70-bit integers included) is the copy's: the fast way is
    taken for every value a validated call holds."""
    copied = module._json_copy(value)
    assert copied is not module._NOT_PLAIN
    assert shape(copied) == shape(TypeAdapter(JsonValue).dump_python(value, mode="json"))
    if isinstance(value, dict | list):
        assert copied is not value  # a copy: the log's JSON shares nothing with the call


@settings(max_examples=60, deadline=None)
@given(verdict=verdicts())
def test_a_verdict_s_json_is_its_model_dump(verdict: Verdict) -> None:
    assert dumped(lambda: verdict_json(verdict)) == dumped(lambda: verdict.model_dump(mode="json"))


@settings(max_examples=100, deadline=None)
@given(verdict=verdicts(), params=st.dictionaries(TEXT, ANY, max_size=3), parsed=ANY)
def test_a_verdict_holding_anything_is_dumped_as_its_model_dump(
    verdict: Verdict, params: dict[str, Any], parsed: Any
) -> None:
    """Calls built without validation (``model_construct``) holding what is not JSON:
    dumped as ``model_dump`` dumps them, with its warnings or its error."""
    calls = [
        LLMCall.model_construct(**{**dict(call), "params": params, "parsed": parsed})
        for call in verdict.evaluation.calls
    ]
    evaluation = verdict.evaluation.model_copy(update={"calls": calls})
    odd = verdict.model_copy(update={"evaluation": evaluation})
    assert dumped(lambda: verdict_json(odd)) == dumped(lambda: odd.model_dump(mode="json"))


class NotedCall(LLMCall):
    note: str = "a field of its own"


class NotedVerdict(Verdict):
    note: str = "mine"


@pytest.mark.parametrize("subclass", ["verdict", "call"])
@settings(max_examples=10, deadline=None)
@given(verdict=verdicts())
def test_a_subclass_is_dumped_as_its_model_dump(subclass: str, verdict: Verdict) -> None:
    call = NotedCall(model="m", template="t", messages=[], params={"a": [1.5]}, latency_s=1.0)
    evaluation = verdict.evaluation.model_copy(update={"calls": [call]})
    verdict = verdict.model_copy(update={"evaluation": evaluation})
    if subclass == "verdict":
        verdict = NotedVerdict(**dict(verdict))
    assert dumped(lambda: verdict_json(verdict)) == dumped(lambda: verdict.model_dump(mode="json"))
