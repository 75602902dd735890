"""`verdict_json` is a verdict's ``model_dump(mode="json")``: key for key in the same order,
value for value of the same types, with the same warnings, whatever the verdict holds in
its calls' free-form JSON (``params``, ``parsed``): JSON of every kind (non-finite floats,
70-bit integers, any text), or values a validated call cannot hold (put there by
``model_construct``), which ``JsonValue`` dumps with a warning or refuses."""

from __future__ import annotations

import dataclasses
import enum
import math
import warnings
from collections import OrderedDict
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Annotated, Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, JsonValue, PlainSerializer, TypeAdapter, field_serializer
from test_storage_export_lines import JSON, TEXT
from test_storage_steps import verdicts

from sotopia_are.evaluation import Evaluation
from sotopia_are.llm import LLMCall, Sampling
from sotopia_are.record import Verdict
from sotopia_are.storage.fields import AS_JSON_TEXT, dumps_ordered_utf8
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


def holds_nan(value: Any) -> bool:
    """Whether ``value`` is, or holds anywhere, a NaN."""
    if isinstance(value, dict):
        return any(holds_nan(v) for v in value.values())
    if isinstance(value, list):
        return any(holds_nan(v) for v in value)
    return isinstance(value, float) and math.isnan(value)


def dumped(dump: Callable[[], Any]) -> tuple[Any, list[str]]:
    """What ``dump`` gives (its shape, or the error it raises) and the warnings it gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # Not the dump's: an unclosed socket of another test, collected meanwhile.
        warnings.simplefilter("ignore", ResourceWarning)
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
    """JSON (infinities and 70-bit integers included) is the copy's: the fast way is taken
    for every value a validated call holds but one holding a NaN. A NaN equals only
    itself, so whether a list holding one equals its copy depends on whether
    pydantic-core copies the float object (2.46 does, 2.50 does not); the dump is right
    either way (the test above)."""
    assume(not holds_nan(value))
    copied = module._json_copy(value)
    assert copied is not module._NOT_PLAIN
    assert shape(copied) == shape(TypeAdapter(JsonValue).dump_python(value, mode="json"))
    if isinstance(value, dict | list):
        assert copied is not value  # a copy: the log's JSON shares nothing with the call


def test_a_bare_nan_is_declined_and_dumped_the_usual_way() -> None:
    """A NaN compares unequal to its copy, so the copy declines it: the usual dump (which
    keeps it) is taken instead."""
    assert module._json_copy(math.nan) is module._NOT_PLAIN
    assert math.isnan(TypeAdapter(JsonValue).dump_python(math.nan, mode="json"))


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


def text_or_error(write: Callable[[], bytes]) -> bytes | type[Exception]:
    """What ``write`` writes, or the type of the error it raises."""
    try:
        return write()
    except Exception as error:  # the same kind of error, either way
        return type(error)


def same_text(verdicts: list[Verdict]) -> None:
    """``verdicts_text`` writes what ``dumps_ordered_utf8`` writes of the verdicts' JSON."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what model_dump warns of an odd value
        try:
            dumps = [verdict_json(v) for v in verdicts]
        except Exception:  # refused by model_dump: the step never writes a text
            return
    expected = text_or_error(lambda: dumps_ordered_utf8(dumps))
    assert text_or_error(lambda: module.verdicts_text(verdicts, dumps)) == expected


@settings(max_examples=150, deadline=None)
@given(verdicts=st.lists(verdicts(), min_size=1, max_size=2))
def test_a_verdicts_text_is_pydantic_cores(verdicts: list[Verdict]) -> None:
    """Random verdicts (their calls' JSON of any kind, NaN, infinities and 70-bit integers
    included; latencies of any float): the same bytes as pydantic-core's."""
    same_text(verdicts)


ODD = (
    st.none()
    | st.floats()
    | st.sampled_from([float("nan"), float("inf"), -float("inf"), 2**70, "null", "\ud800"])
    | st.integers()
    | TEXT
    | st.lists(st.floats(), max_size=2)
)
"""What a field of a verdict built without validation may hold."""


@st.composite
def odd_verdicts(draw: st.DrawFn) -> Verdict:
    """A random verdict with one field of one of its models (anywhere in it, of any
    type) holding anything (put there by ``model_construct``)."""
    verdict = draw(verdicts())

    def odd(model: Any) -> Any:
        name = draw(st.sampled_from(sorted(type(model).model_fields)))
        return type(model).model_construct(**{**dict(model), name: draw(ODD)})

    evaluation = verdict.evaluation
    where = draw(st.sampled_from(["verdict", "evaluation", "rating", "score", "call", "sampling"]))
    if where == "verdict":
        return odd(verdict)  # type: ignore[no-any-return]
    if where == "evaluation":
        evaluation = odd(evaluation)
    elif where in ("rating", "score") and evaluation.ratings:
        rating = evaluation.ratings[0]
        if where == "score":
            name = next(iter(rating.dimensions))
            rating = rating.model_copy(
                update={"dimensions": {**rating.dimensions, name: odd(rating.dimensions[name])}}
            )
        else:
            rating = odd(rating)
        evaluation = evaluation.model_copy(update={"ratings": [rating, *evaluation.ratings[1:]]})
    elif where == "call" and evaluation.calls:
        evaluation = evaluation.model_copy(
            update={"calls": [odd(evaluation.calls[0]), *evaluation.calls[1:]]}
        )
    elif where == "sampling" and verdict.sampling is not None:
        return verdict.model_copy(update={"sampling": odd(verdict.sampling)})
    return verdict.model_copy(update={"evaluation": evaluation})


@settings(max_examples=300, deadline=None)
@given(verdict=odd_verdicts())
def test_a_verdict_holding_anything_has_pydantic_cores_text(verdict: Verdict) -> None:
    """A NaN, an infinity or a None in any field (a float field or not), a text
    ``"null"``, an integer beyond 64 bits, a lone surrogate: the same bytes, or error."""
    same_text([verdict])


def test_a_batch_verdict_s_text_is_orjsons(monkeypatch: pytest.MonkeyPatch) -> None:
    """A verdict holding None in its calls' and sampling's fields and no NaN takes the
    fast way; one NaN, or one None in its free-form JSON, takes pydantic-core's."""
    call = LLMCall(
        model="m",
        template="t",
        messages=[{"role": "user", "content": "hello"}],
        params={"schema": {"type": "object"}, "temperature": 0.7},
        parsed={"score": 3},
        latency_s=0.25,
    )
    verdict = Verdict(
        judge_model="openai/judge",
        rubric="r",
        prompt="p",
        evaluation=Evaluation(
            rubric="r", model="m", agent_names=[], samples=1, valid_samples=0, calls=[call]
        ),
        sampling=Sampling(temperature=0.0),
    )
    dumps = [verdict_json(verdict)]
    slow: list[Any] = []

    def slow_way(value: Any) -> bytes:
        slow.append(value)
        return dumps_ordered_utf8(value)

    monkeypatch.setattr(module, "dumps_ordered_utf8", slow_way)
    assert module.verdicts_text([verdict], dumps) == dumps_ordered_utf8(dumps)
    assert b"null" in dumps_ordered_utf8(dumps) and not slow
    for odd_call in (
        call.model_copy(update={"latency_s": math.nan}),
        call.model_copy(update={"parsed": {"score": None}}),
    ):
        odd = verdict.model_copy(
            update={"evaluation": verdict.evaluation.model_copy(update={"calls": [odd_call]})}
        )
        module.verdicts_text([odd], [verdict_json(odd)])
    assert len(slow) == 2


class Tree(BaseModel):
    label: str | None = None
    kids: list[Tree] = []


def test_a_model_dumped_its_own_way_is_not_counted() -> None:
    """A model with a serializer of its own (or of a field's), a field making its own
    schema, or a model within itself has no plan: its verdicts take the slow way."""

    class Own(BaseModel):
        x: float | None = None

        @field_serializer("x")
        def _x(self, value: float | None) -> float:
            return 0.0

    class Marked(BaseModel):
        x: Annotated[float | None, PlainSerializer(lambda value: 0.0)] = None

    class Texted(BaseModel):
        x: Annotated[dict[str, int] | None, AS_JSON_TEXT] = None

    class Holding(BaseModel):
        own: Own | None = None

    for model in (Own, Marked, Texted, Holding, Tree):
        assert module._none_plan(model) is None, model
    assert module._none_plan(Sampling) is not None
    assert module._none_plan(Verdict) is not None
