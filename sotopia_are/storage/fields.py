"""JSON-encoded fields for hash records.

A Redis hash holds flat strings, and redis-om's ``HashModel`` refuses list and dict
fields. Annotating a list or dict field with :data:`AS_JSON_TEXT` keeps the Python value a
real list or dict while every ``model_dump`` (both modes, so redis-om's own ``save`` too)
writes it as one JSON string, with sorted keys so equal values give equal bytes.
:data:`AS_ORDERED_JSON_TEXT` keeps the keys in their order instead, for values whose order
is part of what they say (a rubric's dimensions, the participants).
Ordered texts are written by pydantic-core, several times faster than ``json``: they parse
to the same values, though a float may be spelt otherwise (``0.00001`` for ``1e-05``).
Validation accepts the JSON string (a value read back from Redis) or the value itself.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema, to_json, to_jsonable_python

__all__ = [
    "AS_JSON_TEXT",
    "AS_ORDERED_JSON_TEXT",
    "AsJsonText",
    "dumps_canonical",
    "dumps_ordered",
    "dumps_ordered_utf8",
]


# What json.dumps makes for these options on each call (half the time of a short text).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def dumps_canonical(value: Any) -> str:
    """``value`` as compact JSON with sorted keys, non-ASCII kept as is."""
    return _CANONICAL.encode(value)


def dumps_ordered(value: Any) -> str:
    """``value`` (JSON: what ``to_jsonable_python`` gives) as compact JSON with its keys in
    their order, non-ASCII kept as is. It parses to what ``json.dumps`` of ``value`` parses
    to (non-finite floats written as ``json`` writes them: ``NaN``, ``Infinity``), which
    is what reading a stored text back depends on; the bytes may differ in how a float is
    spelt. Raises ``ValueError`` for text no UTF-8 can hold (a lone surrogate)."""
    return to_json(value, inf_nan_mode="constants").decode()


def dumps_ordered_utf8(value: Any) -> bytes:
    """:func:`dumps_ordered`'s text as its UTF-8 bytes (as pydantic-core writes them: not
    decoded, for a caller that sends or digests the bytes; a 16 kB verdict's text holding
    non-ASCII costs some 15 µs each way). The same ``ValueError``."""
    return to_json(value, inf_nan_mode="constants")


_EMPTY_TEXTS: dict[type, str] = {list: "[]", dict: "{}"}
"""An empty list's and an empty dict's JSON text (either form)."""


def _loads_if_text(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


class AsJsonText:
    """``Annotated`` marker: the field is stored as JSON text, canonical (sorted keys) or
    ``ordered`` (see module doc)."""

    def __init__(self, *, ordered: bool = False) -> None:
        self.ordered = ordered
        self.dumps = dumps_ordered if ordered else dumps_canonical

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_before_validator_function(
            _loads_if_text,
            handler(source),
            serialization=core_schema.plain_serializer_function_ser_schema(
                self._text, return_schema=core_schema.str_schema()
            ),
        )

    def _text(self, value: Any) -> str:
        if not value:  # most of a new record's fields: their text is known
            text = _EMPTY_TEXTS.get(type(value))
            if text is not None:
                return text
        return self.dumps(to_jsonable_python(value))


AS_JSON_TEXT = AsJsonText()
"""Use as ``Annotated[list[str], AS_JSON_TEXT]``."""

AS_ORDERED_JSON_TEXT = AsJsonText(ordered=True)
"""Use as ``Annotated[dict[str, float], AS_ORDERED_JSON_TEXT]`` where key order matters."""
