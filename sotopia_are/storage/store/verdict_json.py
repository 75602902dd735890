"""`verdict_json`: a verdict as the JSON an ``EpisodeLog`` keeps, without pydantic's
``JsonValue`` serializer for its calls' free-form JSON.

A verdict is kept as its ``model_dump(mode="json")``. Its judge calls' ``params`` (the
answer's JSON schema: some 200 values) and ``parsed`` (the answer) are ``JsonValue``
fields, whose serializer calls a Python function (pydantic's ``_get_type_name``, the
union's discriminator) for every value: some 600,000 instructions of a batch verdict's
900,000-instruction dump. pydantic-core's own inference (``to_jsonable_python``) dumps
such a value without calling Python, and gives what ``JsonValue`` gives whenever it gives
back a value equal to the one it was given; the rest of the verdict is dumped by its
models as before, the two fields excluded and put back in their places.

`verdicts_text`: the stored text of that JSON, written by orjson where it writes what
pydantic-core does (some 280,000 instructions less for a batch verdict's 16 kB).
"""

from __future__ import annotations

import functools
import operator
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from pydantic import BaseModel, JsonValue, PlainSerializer, WrapSerializer
from pydantic_core import to_jsonable_python

from sotopia_are.evaluation import Evaluation
from sotopia_are.llm import LLMCall
from sotopia_are.record import Verdict
from sotopia_are.storage.fields import dumps_ordered_utf8

__all__ = ["verdict_json", "verdicts_text"]

_FREE_FORM = ("params", "parsed")
"""The ``JsonValue`` fields of an ``LLMCall``, dumped by :func:`_json_copy`."""

_WITHOUT_FREE_FORM = {"evaluation": {"calls": {"__all__": set(_FREE_FORM)}}}
"""``model_dump``'s ``exclude`` of a verdict's :data:`_FREE_FORM` fields."""

_NOT_PLAIN = object()
"""What :func:`_json_copy` answers for a value it does not copy."""


def verdict_json(verdict: Verdict) -> dict[str, Any]:
    """``verdict.model_dump(mode="json")``: the same dict, key for key in the same order,
    value for value of the same types (``NaN`` and infinities kept as floats, as
    ``JsonValue`` keeps them), and the same warnings (none) or errors.

    Its calls' free-form JSON is copied by pydantic-core when it is plain JSON (see
    :func:`_json_copy`); a verdict, evaluation or call of a subclass (dumped with fields
    of its own or not), or a value that is not plain JSON, is dumped the usual way whole.
    """
    evaluation = verdict.evaluation
    calls = evaluation.calls
    if (
        not calls
        or type(verdict) is not Verdict
        or type(evaluation) is not Evaluation
        or any(type(call) is not LLMCall for call in calls)
    ):
        return verdict.model_dump(mode="json")
    copies = []
    for call in calls:
        params, parsed = _json_copy(call.params), _json_copy(call.parsed)
        if params is _NOT_PLAIN or parsed is _NOT_PLAIN:
            return verdict.model_dump(mode="json")
        copies.append((params, parsed))
    dumped = verdict.model_dump(mode="json", exclude=_WITHOUT_FREE_FORM)
    dumped_calls = dumped["evaluation"]["calls"]
    for number, (params, parsed) in enumerate(copies):
        rest = dumped_calls[number]
        # In the fields' order, as the whole call's dump has them.
        dumped_calls[number] = {
            name: params if name == "params" else parsed if name == "parsed" else rest[name]
            for name in LLMCall.model_fields
        }
    return dumped


def _json_copy(value: Any) -> Any:
    """``value`` as ``JsonValue``'s ``model_dump(mode="json")`` gives it, copied by
    pydantic-core's inference, or :data:`_NOT_PLAIN`.

    For JSON (dicts with text keys, lists, text, integers, floats, booleans, None: all a
    validated ``JsonValue`` holds) the two give the same: dicts and lists copied, every
    scalar as it is (a non-finite float too, kept by ``inf_nan_mode="constants"``).
    Another value (a tuple, a set, bytes, a plain enum, a date, a dict with other keys,
    an object) ``JsonValue`` dumps with a warning, or refuses: its copy compares unequal
    to it or is refused, and it is answered :data:`_NOT_PLAIN`. What compares equal to
    its copy besides JSON is a subclass of JSON's kinds (an ``IntEnum``, a ``str``
    subclass, an ``OrderedDict``), which both dump alike and without a warning, or an
    object whose ``__eq__`` says so whatever it is given (then only the warning
    ``JsonValue`` gives for an unknown type is not given; a validated call holds none)."""
    try:
        copied = to_jsonable_python(value, inf_nan_mode="constants")
        if copied == value:
            return copied
    except Exception:  # refused, or an __eq__ raising: the usual way raises or warns
        pass
    return _NOT_PLAIN


def verdicts_text(verdicts: Sequence[Verdict], dumped: Sequence[dict[str, Any]]) -> bytes:
    """``dumps_ordered_utf8(dumped)``, the same bytes (or its error), where ``dumped`` is
    ``[verdict_json(v) for v in verdicts]``; written by orjson (four times faster) when
    that gives the same bytes.

    orjson writes what pydantic-core writes but for a ``NaN`` or an infinity, which it
    writes as ``null`` (pydantic-core: ``NaN``, ``Infinity``). Its text is taken when it
    holds no more ``null`` than the verdicts' fields hold None (see :func:`_nones`):
    each such None is a ``null`` of the text, so no ``null`` is left for a float (nor
    for a None in free-form JSON, nor a text's ``"null"``, which then take the slow way
    too). An integer beyond 64 bits or a lone surrogate, which orjson refuses, are
    written (or refused) by pydantic-core."""
    try:
        text = orjson.dumps(dumped)
    except orjson.JSONEncodeError:
        return dumps_ordered_utf8(dumped)
    nones = _verdicts_nones(verdicts)
    if nones is not None and text.count(b"null") == nones:
        return text
    return dumps_ordered_utf8(dumped)


def _verdicts_nones(verdicts: Sequence[Verdict]) -> int | None:
    """:func:`_nones` of the verdicts, summed; None when one cannot be told."""
    total = 0
    try:
        for verdict in verdicts:
            nones = _nones(verdict, Verdict)
            if nones is None:
                return None
            total += nones
    except (AttributeError, KeyError, TypeError):  # a field holding what is not its kind
        return None
    return total


def _nones(value: Any, model: type[BaseModel]) -> int | None:
    """How many of the fields of ``value`` (in a field annotated ``model``, dumped by
    that model's serializer, as pydantic does) and of the models in them hold None,
    counting only fields that may (by their annotations): at most as many as its dump
    holds None. None when that cannot be told: ``value`` not of ``model`` itself (a
    subclass's fields may be dumped otherwise), or see :func:`_none_plan`."""
    plan = _none_plan(model)
    if plan is None or type(value) is not model:
        return None
    nullable, nested = plan
    # The fields read from the model's dict: an attribute of a pydantic model is looked
    # up through its class's __getattr__ hook, several times the cost.
    fields = value.__dict__
    count = nullable(fields).count(None) if nullable is not None else 0
    for name, kind, inner in nested:
        held = fields[name]
        if held is None:
            continue
        for item in (held,) if kind == "model" else held.values() if kind == "dict" else held:
            nones = _nones(item, inner)
            if nones is None:
                return None
            count += nones
    return count


_NonePlan = tuple[Callable[[Any], tuple[Any, ...]] | None, tuple[tuple[str, str, Any], ...]]
"""A model's fields that may hold None (a getter of their values from the model's
``__dict__``, or None when none may) and its fields holding models that may
(``(name, kind, model)``, ``kind`` one of ``"model"``, ``"list"``, ``"dict"``)."""


@functools.cache
def _none_plan(model: type[BaseModel]) -> _NonePlan | None:
    """:func:`_nones`'s plan of ``model``, derived from its fields' annotations; None
    when it cannot be told that a field holding None is dumped as None: a serializer of
    the model's or a field's own, an excluded field, an annotation of a kind other than
    text, numbers, booleans, their enums and literals, models, JSON, and lists, tuples,
    dicts by text and unions of those."""
    decorators = model.__pydantic_decorators__
    if decorators.field_serializers or decorators.model_serializers:
        return None
    nullable = []
    nested = []
    for name, field in model.model_fields.items():
        if field.exclude or any(map(_may_serialize, field.metadata)):
            return None
        kind = _kind(field.annotation)
        if kind is None:
            return None
        may_be_none, holds, inner = kind
        if may_be_none:
            nullable.append(name)
        if inner is not None:
            if inner in _DERIVING:
                return None  # a model within itself: not followed
            _DERIVING.add(inner)
            try:
                inner_plan = _none_plan(inner)
            finally:
                _DERIVING.discard(inner)
            if inner_plan is None:
                return None
            if inner_plan != (None, ()):  # a model none of whose fields may hold None
                nested.append((name, holds, inner))
    getter = None
    if nullable:
        get = operator.itemgetter(*nullable)
        getter = get if len(nullable) > 1 else lambda fields: (get(fields),)
    return getter, tuple(nested)


def _may_serialize(metadata: object) -> bool:
    """Whether a field's ``Annotated`` ``metadata`` may change how it is dumped: a
    serializer, or anything that makes its own schema (constraints such as ``Ge`` or
    ``Strict`` do not)."""
    return isinstance(metadata, PlainSerializer | WrapSerializer) or hasattr(
        metadata, "__get_pydantic_core_schema__"
    )


_DERIVING: set[type[BaseModel]] = set()
"""The models whose :func:`_none_plan` is being derived (one within another)."""

_SCALARS = (str, int, float, type(None))
"""Types dumped as themselves (their subclasses too: ``bool``, enums of text or numbers)."""


def _kind(annotation: Any) -> tuple[bool, str, type[BaseModel] | None] | None:
    """Of a field annotated ``annotation``: whether it may hold None, and the model it
    holds (with how: ``"model"``, a ``"list"`` or tuple of them, a ``"dict"`` of them)
    if any; None when :func:`_none_plan` cannot tell."""
    if annotation is Any or annotation is JsonValue or annotation is type(None):
        return True, "", None
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return False, "model", annotation
        return (False, "", None) if issubclass(annotation, _SCALARS) else None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return (None in args, "", None) if all(isinstance(a, _SCALARS) for a in args) else None
    if origin is typing.Union or origin is types.UnionType:
        kinds = [kind for kind in map(_kind, args) if kind is not None]
        models = {(holds, inner) for _, holds, inner in kinds if inner is not None}
        if len(kinds) < len(args) or len(models) > 1:
            return None
        holds, inner = models.pop() if models else ("", None)
        return any(may_be_none for may_be_none, _, _ in kinds), holds, inner
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        element = _kind(args[0])
        if element is None or element[1] not in ("", "model"):
            return None
        return False, "list" if element[2] is not None else "", element[2]
    if origin is dict and args[0] is str:
        value = _kind(args[1])
        if value is None or value[1] not in ("", "model"):
            return None
        return False, "dict" if value[2] is not None else "", value[2]
    return None
