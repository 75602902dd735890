"""The models and the reader: ARE's files, the documentation example, and bad documents."""

import json
from pathlib import Path
from typing import Any

import pytest

from sotopia_are.simulation.data_handler.errors import ScenarioFormatError, format_json_path
from sotopia_are.simulation.data_handler.models import (
    TRACE_V1_VERSION,
    ExportedEvent,
    ExportedOracleEvent,
    ExportedTrace,
)
from sotopia_are.simulation.data_handler.reader import read_trace

ARE_DATA = Path(__file__).parent.parent / "data" / "are"
REAL_EXPORTS = ["meeting_request_001.json", "scenario_tutorial.json"]


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ARE_DATA / name).read_text())
    return data


@pytest.mark.parametrize("name", REAL_EXPORTS)
def test_real_exports_validate_and_serialise_back_byte_for_byte(name: str) -> None:
    text = (ARE_DATA / name).read_text()
    trace, notes = read_trace(text)
    assert notes == []
    assert trace.version == TRACE_V1_VERSION
    assert trace.model_dump_json(indent=2) == text.rstrip("\n")


def test_oracle_events_are_told_apart_from_plain_events() -> None:
    trace, _ = read_trace((ARE_DATA / "meeting_request_001.json").read_text())
    assert [type(e) for e in trace.events] == [
        ExportedEvent,
        ExportedOracleEvent,
        ExportedOracleEvent,
    ]


def test_plain_events_are_written_without_our_check_field() -> None:
    trace, _ = read_trace((ARE_DATA / "meeting_request_001.json").read_text())
    assert "check" not in json.loads(trace.model_dump_json())["events"][0]


def test_documentation_example_is_normalised_and_says_how() -> None:
    trace, notes = read_trace((ARE_DATA / "documentation_complete_example.json").read_text())
    definition = trace.metadata.definition
    assert definition.scenario_id == "email_apology_001"
    assert definition.seed == 12345
    assert definition.start_time == 1640995200
    assert definition.tags == ["email", "communication", "customer-service"]
    assert definition.hints[0].content == "Check your email for client complaints"
    assert trace.version == TRACE_V1_VERSION
    event = trace.events[0]
    assert event.class_name == "Event"
    assert event.event_relative_time is None
    assert event.action is not None and event.action.args is not None
    assert event.action.args[0].value_type == "str"
    assert any("metadata" in note for note in notes)
    assert any("'type' read as 'value_type'" in note for note in notes)


def test_flat_metadata_keeps_simulation_and_annotation_fields() -> None:
    doc = {
        "version": TRACE_V1_VERSION,
        "metadata": {"scenario_id": "s", "agent_id": "a", "comment": "ok", "date": 5.0},
    }
    trace, _ = read_trace(json.dumps(doc))
    assert trace.metadata.simulation is not None and trace.metadata.simulation.agent_id == "a"
    assert trace.metadata.annotation is not None and trace.metadata.annotation.comment == "ok"


def test_json_typed_arg_values_are_encoded_as_text() -> None:
    doc = load("meeting_request_001.json")
    doc["events"][0]["action"]["args"] = [
        {"name": "n", "value": 3},
        {"name": "xs", "value": [1, {"a": None}], "value_type": None},
        {"name": "flag", "value": True},
    ]
    trace, _ = read_trace(json.dumps(doc))
    action = trace.events[0].action
    assert action is not None and action.args is not None
    assert [(a.value, a.value_type) for a in action.args] == [
        ("3", "int"),
        ('[1, {"a": null}]', "list"),
        ("True", "bool"),
    ]


def mutate(path: list[str | int], value: Any) -> str:
    doc: Any = load("meeting_request_001.json")
    target = doc
    for part in path[:-1]:
        target = target[part]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ('{"version": ', "$", "not valid JSON"),
        ("[]", "$", "expected a JSON object"),
        ('{"version": NaN}', "$", "NaN"),
        (mutate(["events", 1, "event_id"], KeyError), "events[1].event_id", "Field required"),
        (mutate(["events", 2, "event_time"], "soon"), "events[2].event_time", "valid number"),
        (
            mutate(["events", 2, "dependencies", 0], 7),
            "events[2].dependencies[0]",
            "valid string",
        ),
        (mutate(["apps", 0, "name"], None), "apps[0].name", "valid string"),
        (
            mutate(["metadata", "definition", "seed"], "zero"),
            "metadata.definition.seed",
            "valid integer",
        ),
        (mutate(["metadata", "definition"], KeyError), "metadata.definition", "required"),
        (mutate(["version"], "3.1"), "version", "Unsupported version: 3.1"),
        (
            mutate(["completed_events", 0, "action", "args", 0, "value"], 7.5).replace(
                "7.5", "1e400"
            ),
            "completed_events[0].action.args[0].value",
            "not a finite number",
        ),
    ],
    ids=lambda v: v if len(v) < 40 else None,
)
def test_bad_documents_name_the_json_path(text: str, where: str, words: str) -> None:
    with pytest.raises(ScenarioFormatError) as caught:
        read_trace(text)
    assert format_json_path(caught.value.path) == where
    assert str(caught.value).startswith(f"{where}: ")
    assert words in str(caught.value)


def test_json_paths_render_like_code() -> None:
    assert format_json_path([]) == "$"
    assert format_json_path(["events", 3, "dependencies", 0]) == "events[3].dependencies[0]"


def test_the_trace_model_is_the_root_of_the_format() -> None:
    assert set(ExportedTrace.model_fields) >= {
        "metadata",
        "world_logs",
        "apps",
        "events",
        "completed_events",
        "version",
        "context",
        "augmentation",
    }
