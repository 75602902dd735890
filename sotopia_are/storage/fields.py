"""JSON-encoded fields for hash records.

A Redis hash holds flat strings, and redis-om's ``HashModel`` refuses list and dict
fields. Annotating a list or dict field with :data:`AS_JSON_TEXT` keeps the Python value a
real list or dict while every ``model_dump`` (both modes, so redis-om's own ``save`` too)
writes it as one JSON string, with sorted keys so equal values give equal bytes.
:data:`AS_ORDERED_JSON_TEXT` keeps the keys in their order instead, for values whose order
is part of what they say (a rubric's dimensions, the participants).
Validation accepts the JSON string (a value read back from Redis) or the value itself.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import PydanticSerializationError, core_schema, to_json, to_jsonable_python

__all__ = ["AS_JSON_TEXT", "AS_ORDERED_JSON_TEXT", "AsJsonText", "dumps_canonical", "dumps_ordered"]


def dumps_canonical(value: Any) -> str:
    """``value`` as compact JSON with sorted keys, non-ASCII kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def dumps_ordered(value: Any) -> str:
    """``value`` as compact JSON with its keys in their order, non-ASCII kept as is:
    ``json.dumps(to_jsonable_python(value), separators=(",", ":"), ensure_ascii=False)``,
    made by pydantic-core (several times faster on a verdict) wherever that writes the
    same text."""
    try:
        text = to_json(value).decode()
    except (PydanticSerializationError, UnicodeDecodeError, ValueError, TypeError):
        text = None
    # pydantic-core writes a float in its own form where ``json`` writes an exponent
    # (6.4e-05 is 0.000064, 1e-07 is 1e-7); its other texts are json's. A text with such
    # a number, or what might be one, is written by json itself.
    if text is None or _EXPONENT_OR_TINY.search(text):
        return json.dumps(to_jsonable_python(value), separators=(",", ":"), ensure_ascii=False)
    return text


_EXPONENT_OR_TINY = re.compile(r"\d[eE][-+]|0\.0000")


def _loads_if_text(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


class AsJsonText:
    """``Annotated`` marker: the field is stored as JSON text, canonical (sorted keys) or
    ``ordered`` (see module doc)."""

    def __init__(self, *, ordered: bool = False) -> None:
        self.ordered = ordered

    def text(self, value: Any) -> str:
        """``value`` (any value the field holds) as the field's JSON text."""
        if self.ordered:
            return dumps_ordered(value)
        return dumps_canonical(to_jsonable_python(value))

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_before_validator_function(
            _loads_if_text,
            handler(source),
            serialization=core_schema.plain_serializer_function_ser_schema(
                self.text, return_schema=core_schema.str_schema()
            ),
        )


AS_JSON_TEXT = AsJsonText()
"""Use as ``Annotated[list[str], AS_JSON_TEXT]``."""

AS_ORDERED_JSON_TEXT = AsJsonText(ordered=True)
"""Use as ``Annotated[dict[str, float], AS_ORDERED_JSON_TEXT]`` where key order matters."""
