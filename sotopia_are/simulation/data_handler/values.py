"""How action args and return values are written as ``value`` / ``value_type`` strings.

ARE stores every value as a string plus the name of its Python type. This module is the
one place that defines the encoding, so that decoding what we encode gives back an equal
value of the same type — which ARE's own exporter does not (it writes ``str(dict)``,
Python syntax, and drops falsy return values such as ``0`` or ``""``):

=================  ==========================  ===========================
Python value       ``value``                   ``value_type``
=================  ==========================  ===========================
``None``           ``null``                    ``null``
``str``            the string itself           ``"str"``
``bool``           ``"True"`` / ``"False"``    ``"bool"``
``int``            decimal digits              ``"int"``
``float``          ``repr`` (finite only)      ``"float"``
``list``/``dict``  JSON text (``json.dumps``)  ``"list"`` / ``"dict"``
``OpaqueValue``    its text                    its ``value_type``
=================  ==========================  ===========================

Lists and dicts may nest any of the JSON types above (dict keys must be strings). Any
other value — tuples, sets, enums, NaN, objects — is not representable and
:func:`encode_value` raises :class:`ValueError` for it, so a file is never written that
would not import. Decoding also reads ARE's Python-syntax lists/dicts and keeps values of
types it does not know (ARE writes e.g. ``"Email"``) as :class:`OpaqueValue`.
"""

import ast
import json
import math
from typing import Any

from .errors import format_json_path

__all__ = [
    "OpaqueValue",
    "check_json_value",
    "decode_value",
    "encode_value",
]

_JSON_CONTAINERS: dict[str, type] = {"list": list, "dict": dict}


class OpaqueValue(str):
    """A value of a type this project does not know, kept as the text ARE wrote for it.

    It behaves as that text (it is a ``str``) and is written back with the same
    ``value_type``, so files from ARE survive an import/export unchanged.
    """

    value_type: str

    def __new__(cls, text: str, value_type: str) -> "OpaqueValue":
        self = super().__new__(cls, text)
        self.value_type = value_type
        return self

    def __repr__(self) -> str:
        return f"OpaqueValue({str.__repr__(self)}, {self.value_type!r})"


def check_json_value(value: Any, path: list[str | int] | None = None) -> None:
    """Raise ``ValueError`` naming the first part of ``value`` that is not plain JSON.

    Plain JSON: ``None``, ``str``, ``bool``, ``int``, finite ``float``, and ``list`` /
    ``dict`` (string keys) of those, checked by exact type so that subclasses (enums,
    ``OpaqueValue``) are not silently flattened.
    """
    here = path if path is not None else []
    kind = type(value)
    if value is None or kind in (str, bool, int):
        return
    if kind is float:
        if not math.isfinite(value):
            raise ValueError(f"{_where(here)}{value!r} is not a finite number")
        return
    if kind is list:
        for index, item in enumerate(value):
            check_json_value(item, [*here, index])
        return
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise ValueError(f"{_where(here)}dict key {key!r} is not a string")
            check_json_value(item, [*here, key])
        return
    raise ValueError(f"{_where(here)}a {kind.__name__} ({value!r:.80}) is not a JSON value")


def _where(path: list[str | int]) -> str:
    return f"at {format_json_path(path)}: " if path else ""


def encode_value(value: Any) -> tuple[str | None, str | None]:
    """Encode one value as ``(value, value_type)``; ``ValueError`` if not representable."""
    # Most values are text or absent (every logged action's arguments): answered before
    # the checks, as the checks below would answer them.
    if type(value) is str:
        return value, "str"
    if value is None:
        return None, None
    if isinstance(value, OpaqueValue):
        return str(value), value.value_type
    check_json_value(value)
    if value is None:
        return None, None
    if type(value) in (list, dict):
        return json.dumps(value), type(value).__name__
    return (repr(value) if type(value) is float else str(value)), type(value).__name__


def decode_value(value: str | None, value_type: str | None) -> Any:
    """Decode what :func:`encode_value` (or ARE) wrote; ``ValueError`` if it is malformed.

    A null ``value`` is ``None``; a null ``value_type`` means the text is a string.
    """
    if value is None:
        return None
    if value_type is None or value_type == "str":
        return value
    if value_type == "bool":
        if value in ("True", "true"):
            return True
        if value in ("False", "false"):
            return False
        raise ValueError(f"{value!r:.80} is not a bool (True or False)")
    if value_type == "int":
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"{value!r:.80} is not an int") from None
    if value_type == "float":
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"{value!r:.80} is not a float") from None
        if not math.isfinite(number):
            raise ValueError(f"{value!r:.80} is not a finite float")
        return number
    container = _JSON_CONTAINERS.get(value_type)
    if container is None:
        return OpaqueValue(value, value_type)
    decoded = _parse_container(value)
    if type(decoded) is not container:
        raise ValueError(f"{value!r:.80} is not a {value_type}")
    check_json_value(decoded)
    return decoded


def _parse_container(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    # ARE writes return values with str(), i.e. Python syntax: {'a': None, 'b': True}.
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(f"{text!r:.80} is neither JSON nor a Python literal") from None
