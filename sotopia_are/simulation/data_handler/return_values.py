"""Return values of completed events: JSON values (see :mod:`.values`) plus validation results.

A completed VALIDATION event returns a :class:`ValidationResult`, whose failed milestones
and triggered minefields are functions. It is written with ``value_type``
``"ValidationResult"`` and, as ``value``, the JSON object
``{"success", "message", "failed_milestones", "triggered_minefields"}`` with the functions
as importable references (see :mod:`.callables`).
"""

import json
from collections.abc import Collection
from typing import Any

from sotopia_are.simulation.types import ValidationResult

from .callables import callable_reference, resolve_callable_reference
from .values import OpaqueValue, decode_value, encode_value

__all__ = ["VALIDATION_RESULT_TYPE", "decode_return_value", "encode_return_value"]

VALIDATION_RESULT_TYPE = "ValidationResult"


def encode_return_value(value: Any) -> tuple[str | None, str | None]:
    """Encode a return value as ``(value, value_type)``; ``ValueError`` if not representable."""
    if isinstance(value, ValidationResult):
        document = {
            "success": value.success,
            "message": value.message,
            "failed_milestones": [callable_reference(f) for f in value.failed_milestones],
            "triggered_minefields": [callable_reference(f) for f in value.triggered_minefields],
        }
        return json.dumps(document), VALIDATION_RESULT_TYPE
    return encode_value(value)


def decode_return_value(
    value: str | None, value_type: str | None, modules: Collection[str] = ()
) -> Any:
    """Decode a return value; a ``ValidationResult``'s function references resolve only
    into ``modules`` (see :func:`.callables.resolve_callable_reference`).

    Values of JSON types decode exactly; a text that does not parse as its declared type
    (ARE writes ``str()`` of arbitrary objects) is kept as an :class:`OpaqueValue`, since a
    completed event is a record, not something to execute. A malformed
    ``ValidationResult`` is a ``ValueError``.
    """
    if value_type == VALIDATION_RESULT_TYPE and value is not None:
        return _decode_validation_result(value, modules)
    try:
        return decode_value(value, value_type)
    except ValueError:
        assert value is not None and value_type is not None  # decode_value accepts those
        return OpaqueValue(value, value_type)


def _decode_validation_result(text: str, modules: Collection[str]) -> ValidationResult:
    try:
        document = json.loads(text)
        success = document["success"]
        message = document["message"]
        failed = document["failed_milestones"]
        triggered = document["triggered_minefields"]
    except (json.JSONDecodeError, TypeError, KeyError) as error:
        raise ValueError(
            "a ValidationResult must be a JSON object with success, message, "
            f"failed_milestones and triggered_minefields ({error})"
        ) from None
    if type(success) is not bool or type(message) is not str:
        raise ValueError("a ValidationResult needs a boolean success and a string message")
    if not (isinstance(failed, list) and isinstance(triggered, list)) or not all(
        isinstance(ref, str) for ref in [*failed, *triggered]
    ):
        raise ValueError("ValidationResult milestones and minefields must be lists of references")
    return ValidationResult(
        success=success,
        message=message,
        failed_milestones=[resolve_callable_reference(ref, modules) for ref in failed],
        triggered_minefields=[resolve_callable_reference(ref, modules) for ref in triggered],
    )
