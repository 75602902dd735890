"""Models made of parts that are valid already, without validating them again.

Every model call makes a handful of small pydantic models (its request, its attempts, its
record, the prompt's messages) from values this package has just validated or built
itself. Validating them again costs more than the rest of making them, and pydantic's
``model_construct`` costs more than validating (it loops over every field's alias and
default). :func:`of_valid_fields` makes what ``model_construct`` makes of a complete set
of fields. Never give it anything a user, a file or a model's answer supplied: those
are validated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["of_valid_dataclass", "of_valid_fields", "slot_setters"]

M = TypeVar("M", bound=BaseModel)
D = TypeVar("D")

_new = object.__new__
# BaseModel's slots, set through their descriptors: object.__setattr__ finds the same
# descriptor by name on every call.
_SLOTS = BaseModel.__dict__
_set_dict = _SLOTS["__dict__"].__set__
_set_fields_set = _SLOTS["__pydantic_fields_set__"].__set__
_set_extra = _SLOTS["__pydantic_extra__"].__set__
_set_private = _SLOTS["__pydantic_private__"].__set__


def of_valid_fields(cls: type[M], fields: dict[str, Any], given: set[str] | None = None) -> M:
    """``cls.model_construct(**fields)`` for ``fields`` that name every field of ``cls``
    (defaults are not filled in), each of its field's type: the dict is kept as the
    model's, not copied. ``given`` are the fields set by the caller (default: all),
    as ``model_fields_set`` reports them. ``cls`` must have no private attributes and
    no extra fields."""
    model = _new(cls)
    _set_dict(model, fields)
    _set_fields_set(model, set(fields) if given is None else given)
    _set_extra(model, None)
    _set_private(model, None)
    return model


def of_valid_dataclass(cls: type[D], fields: dict[str, Any]) -> D:
    """``cls(**fields)`` for a dataclass ``cls`` without slots or ``__post_init__`` and
    ``fields`` that name every field, each valid: put into the instance's ``__dict__`` at
    once, where a frozen dataclass's ``__init__`` sets each through ``object.__setattr__``."""
    made: D = _new(cls)
    made.__dict__.update(fields)
    return made


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of a slotted dataclass's fields' slots, in field order: an instance of
    valid values made with ``object.__new__`` and these skips the ``__init__`` of a frozen
    dataclass, which sets each field through ``object.__setattr__`` (a lookup by name)."""
    return tuple(cls.__dict__[field.name].__set__ for field in dataclasses.fields(cls))
