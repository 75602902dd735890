"""A model call record's JSON, written by orjson where that gives pydantic-core's bytes.

The store keeps every ``LLMCall`` as its ``model_dump_json()`` (about 4 kB, 20 calls an
episode): pydantic-core spent some 96,000 instructions on one, a third of them on its
texts (13.6 instructions a character, orjson's 2.3) and a quarter on its parameters (an
800-byte JSON schema held as ``JsonValue``). orjson writes it in 43,000, and the same JSON
of the same values: texts with the same minimal escapes (a law in
``tests/llm/test_llm_request_bodies.py``), floats with the same shortest digits, ``null``
for a NaN or an infinity (the models' ``ser_json_inf_nan``), integers alike, a model's
fields in the order its ``__dict__`` holds them, leaving out a field it lacks, as
pydantic-core does (its ``__dict__`` holds nothing else: every way pydantic makes or
changes a model keeps it so).

Where the two would differ the record is written by its model's serializer, as before,
with the same errors:

* a number field holding another type than its own exactly (an ``int`` field's
  ``True``, a ``float`` field's ``1``: pydantic-core writes ``1`` and ``1.0``), or a
  number field missing;
* a record of a subclass, or any model in it but an exact ``LLMCall``, ``Attempt`` or
  ``Message`` (their fields are what orjson is given, :func:`_fields_of`);
* whatever orjson refuses (:data:`_OPTIONS`: subclasses of ``str``, ``int``, ``dict``
  and ``list``, dates, dataclasses; and of itself a lone surrogate, an integer beyond 64
  bits, an object of any other class).

Any other value in a text or ``JsonValue`` field (which ``model_construct`` lets in) is
written by pydantic-core by inference (after a warning), as orjson writes it: tuples,
enums and UUIDs included. The models' classes are checked once
(:func:`_checks_by_model`) for what would make pydantic-core write their fields
otherwise: a serializer, an alias, an excluded or computed field, extra fields kept,
non-finite floats not written as ``null``, a field of another type than those above.
"""

from __future__ import annotations

import itertools
import operator
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union

import orjson
from pydantic import JsonValue

from sotopia_are.llm import LLMCall
from sotopia_are.llm.accounting import Attempt
from sotopia_are.llm.request import Message

__all__ = ["call_json"]

_OPTIONS = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)
"""The values orjson passes to :func:`_fields_of`, which refuses them, instead of
writing them otherwise than pydantic-core."""


def call_json(call: LLMCall) -> bytes:
    """``call.model_dump_json()`` as UTF-8 bytes (pydantic-core's, not decoded), byte for
    byte, with the same errors (see the module's doc)."""
    if type(call) is LLMCall and LLMCall in _CHECKS:
        try:
            return orjson.dumps(_fields_of(call), default=_fields_of, option=_OPTIONS)
        except (TypeError, KeyError):  # (orjson's JSONEncodeError): the model's way
            pass
    return type(call).__pydantic_serializer__.to_json(call)


def _fields_of(value: object) -> dict[str, Any]:
    """orjson's ``default``: the fields (``__dict__``) of an exact ``LLMCall``,
    ``Attempt`` or ``Message`` whose number fields hold their own types exactly (or None
    where they may); ``KeyError`` for a number field missing, ``TypeError`` for anything
    else."""
    checks = _CHECKS.get(type(value))
    if checks is not None:
        fields: dict[str, Any] = value.__dict__
        numbers, fitting = checks
        # (One C call for the number fields' types: a Python test per field costs about
        # what pydantic-core spends on writing the field.)
        if numbers is None or tuple(map(type, numbers(fields))) in fitting:
            return fields
    raise TypeError(f"{type(value).__name__} is written by its model")


_Checks = tuple[Callable[[dict[str, Any]], tuple[Any, ...]] | None, frozenset[tuple[type, ...]]]
"""What is checked of a model's fields: a getter of its number fields' values (None: it
has none), and the tuples of types those may hold (each its field's own type exactly, or
None where the field may be None)."""


def _checks_by_model() -> dict[type, _Checks]:
    """The checks of each model a call record holds; none when one of them has anything
    that pydantic-core writes otherwise than orjson (see the module's doc)."""
    checks: dict[type, _Checks] = {}
    for model in (LLMCall, Attempt, Message):
        config = model.model_config
        decorators = model.__pydantic_decorators__
        if (
            model.model_computed_fields
            or decorators.field_serializers
            or decorators.model_serializers
            or config.get("extra") == "allow"
            or config.get("ser_json_inf_nan", "null") != "null"
            or config.get("serialize_by_alias")
        ):
            return {}
        names: list[str] = []
        kinds: list[tuple[type, ...]] = []
        for name, field in model.model_fields.items():
            kind = _kind(field.annotation)
            if (
                kind is None
                or field.metadata
                or field.alias is not None
                or field.serialization_alias is not None
                or field.exclude
                or getattr(field, "exclude_if", None) is not None
            ):
                return {}
            if kind:
                names.append(name)
                kinds.append(kind)
        # The first number field twice: itemgetter gives a tuple for two names or more.
        numbers = operator.itemgetter(*names, names[0]) if names else None
        checks[model] = (numbers, frozenset(itertools.product(*kinds, *kinds[:1])))
    return checks


_NONE = type(None)


def _kind(annotation: Any) -> tuple[type, ...] | None:
    """The types a field declared ``annotation`` must hold exactly for orjson to write it
    (``()``: whatever it holds), or None for a field of another type."""
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if annotation is int or annotation is float:
        return (annotation,)
    if annotation is str or (origin is Literal and all(type(a) is str for a in arguments)):
        return ()
    if annotation is JsonValue or (origin is dict and arguments == (str, JsonValue)):
        return ()
    if origin is list and arguments in ((str,), (Message,), (Attempt,)):
        return ()
    if (origin is Union or origin is types.UnionType) and len(arguments) == 2:
        value, none = arguments
        kind = _kind(value) if none is _NONE else None
        return None if kind is None else (*kind, _NONE) if kind else ()
    return None


_CHECKS = _checks_by_model()
