"""Reading a scenario document into an :class:`ExportedTrace`, with JSON-path errors.

Accepts both what ARE's exporter writes and the flatter "Complete Example" of ARE's
documentation, which users paste as is. The documented example differs from the models
in ways that are unambiguous to fix, so they are normalised (and each fix is reported):

- definition fields directly under ``metadata`` (and simulation/annotation fields beside
  them) are moved under ``metadata.definition`` / ``.simulation`` / ``.annotation``;
- ``"version": "2.0"`` (the documentation's) is read as ``are_simulation_v1``;
- an action arg with ``"type"`` instead of ``"value_type"`` is renamed;
- an arg ``value`` given as a JSON number, bool, list or object is encoded as the text
  ARE expects (see :mod:`.values`);
- an event without ``event_time`` / ``event_relative_time`` gets ``null`` for them;
- the event class ``ScheduledEvent`` (no such class in ARE) is read as ``Event``.

Anything else that does not fit the models is a :class:`ScenarioFormatError` naming the
JSON path of the first problem.
"""

import copy
import json
from typing import Any

from pydantic import ValidationError

from .errors import ScenarioFormatError, format_json_path
from .models import TRACE_V1_VERSION, ExportedTrace
from .values import encode_value

__all__ = ["DOCUMENTED_EXAMPLE_VERSION", "SUPPORTED_VERSIONS", "loads_json", "read_trace"]

SUPPORTED_VERSIONS: tuple[str, ...] = (TRACE_V1_VERSION,)
"""Format versions read without any change."""

DOCUMENTED_EXAMPLE_VERSION = "2.0"
"""The version ARE's documentation example carries; read as :data:`TRACE_V1_VERSION`."""

_SIMULATION_FIELDS = ("agent_id", "model_id")
_ANNOTATION_FIELDS = ("annotation_id", "annotator", "validation_decision", "comment", "date")
_METADATA_PARTS = ("definition", "simulation", "annotation", "execution", "runner_config")
# Pydantic puts the discriminator tag of an event into error locations; users never
# wrote it, so it is left out of the paths we report.
_UNION_TAGS = frozenset({"ExportedEvent", "ExportedOracleEvent"})


def read_trace(json_str: str | bytes) -> tuple[ExportedTrace, list[str]]:
    """Parse and validate a scenario document.

    Returns the trace and the normalisations applied (empty for ARE's own files).
    Raises :class:`ScenarioFormatError` for broken JSON, a wrong shape, or an
    unsupported version.
    """
    document = _parse_json(json_str)
    notes: list[str] = []
    try:
        normalised = _normalise(document, notes)
        trace = ExportedTrace.model_validate(normalised)
    except ValidationError as error:
        raise _format_error(error) from None
    except RecursionError:
        # Nesting just shallow enough for the JSON parser can still be too deep to copy.
        raise ScenarioFormatError([], "nested too deeply") from None
    if trace.version not in SUPPORTED_VERSIONS:
        raise ScenarioFormatError(
            ["version"],
            # ARE's text, which its tests match.
            f"Unsupported version: {trace.version}; supported: "
            + ", ".join(repr(v) for v in SUPPORTED_VERSIONS),
        )
    return trace, notes


def loads_json(text: str | bytes, **options: Any) -> Any:
    """``json.loads(text, **options)``, with nesting too deep for Python's parser a
    ``json.JSONDecodeError`` like any other broken JSON (not a ``RecursionError``)."""
    try:
        return json.loads(text, **options)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", "", 0) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_json(json_str: str | bytes) -> Any:
    try:
        return loads_json(json_str, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise ScenarioFormatError(
            [], f"not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from None
    except (ValueError, UnicodeDecodeError) as error:
        raise ScenarioFormatError([], f"not valid JSON: {error}") from None


def _normalise(document: Any, notes: list[str]) -> Any:
    if not isinstance(document, dict):
        raise ScenarioFormatError([], f"expected a JSON object, got {_json_type(document)}")
    data = copy.deepcopy(document)
    metadata = data.get("metadata")
    if isinstance(metadata, dict) and "definition" not in metadata and "scenario_id" in metadata:
        data["metadata"] = _nest_metadata(metadata)
        notes.append("metadata: flat fields moved under metadata.definition")
    if data.get("version") == DOCUMENTED_EXAMPLE_VERSION:
        data["version"] = TRACE_V1_VERSION
        notes.append(f"version: {DOCUMENTED_EXAMPLE_VERSION!r} read as {TRACE_V1_VERSION!r}")
    for key in ("events", "completed_events"):
        events = data.get(key)
        if isinstance(events, list):
            for index, event in enumerate(events):
                if isinstance(event, dict):
                    _normalise_event(event, [key, index], notes, scheduled=key == "events")
    return data


def _nest_metadata(flat: dict[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {k: flat[k] for k in _METADATA_PARTS if k in flat}
    simulation = {k: flat[k] for k in _SIMULATION_FIELDS if k in flat}
    annotation = {k: flat[k] for k in _ANNOTATION_FIELDS if k in flat}
    moved = {*_METADATA_PARTS, *_SIMULATION_FIELDS, *_ANNOTATION_FIELDS}
    nested["definition"] = {k: v for k, v in flat.items() if k not in moved}
    if simulation:
        nested["simulation"] = simulation
    if annotation:
        nested["annotation"] = annotation
    return nested


def _normalise_event(
    event: dict[str, Any], path: list[str | int], notes: list[str], *, scheduled: bool
) -> None:
    where = format_json_path(path)
    if scheduled and event.get("class_name") == "ScheduledEvent":
        event["class_name"] = "Event"
        notes.append(f"{where}.class_name: 'ScheduledEvent' read as 'Event'")
    for key in ("event_time", "event_relative_time"):
        if key not in event:
            event[key] = None
            notes.append(f"{where}.{key}: missing, read as null")
    action = event.get("action")
    args = action.get("args") if isinstance(action, dict) else None
    if not isinstance(args, list):
        return
    for index, arg in enumerate(args):
        if isinstance(arg, dict):
            _normalise_arg(arg, [*path, "action", "args", index], notes)


def _normalise_arg(arg: dict[str, Any], path: list[str | int], notes: list[str]) -> None:
    where = format_json_path(path)
    if "value_type" not in arg and "type" in arg:
        arg["value_type"] = arg.pop("type")
        notes.append(f"{where}: 'type' read as 'value_type'")
    value = arg.get("value")
    if value is None or isinstance(value, str):
        return
    try:
        text, inferred_type = encode_value(value)
    except ValueError as error:
        raise ScenarioFormatError([*path, "value"], str(error)) from None
    arg["value"] = text
    if arg.get("value_type") is None:
        arg["value_type"] = inferred_type
    notes.append(f"{where}.value: JSON {_json_type(value)} encoded as text")


def _format_error(error: ValidationError) -> ScenarioFormatError:
    problems = error.errors(include_url=False)
    first = problems[0]
    path = [part for part in first["loc"] if part not in _UNION_TAGS]
    message = first["msg"]
    if first["type"] != "missing":
        message += f" (got {_json_type(first['input'])} {_short(first['input'])})"
    if len(problems) > 1:
        message += f"; and {len(problems) - 1} more problem(s)"
    return ScenarioFormatError(path, message)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
