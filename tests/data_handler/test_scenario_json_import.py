"""Importing: ARE's real exports, the documentation example, left-out apps and bad files."""

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from scenario_json_apps import EmailClientApp, are_registry, make_test_registry

from sotopia_are.simulation.apps.registry import AppRegistry
from sotopia_are.simulation.data_handler.errors import ScenarioFormatError, format_json_path
from sotopia_are.simulation.data_handler.exporter import JsonScenarioExporter
from sotopia_are.simulation.data_handler.importer import JsonScenarioImporter
from sotopia_are.simulation.data_handler.models import ExportedTrace
from sotopia_are.simulation.data_handler.values import OpaqueValue
from sotopia_are.simulation.environment import Environment, run_in_oracle_mode
from sotopia_are.simulation.scenarios.scenario_imported_from_json import (
    BenchmarkScenarioImportedFromJson,
)
from sotopia_are.simulation.types import CompletedOracleEvent, OracleEvent

ARE_DATA = Path(__file__).parent.parent / "data" / "are"
MEETING = (ARE_DATA / "meeting_request_001.json").read_text()
TUTORIAL = (ARE_DATA / "scenario_tutorial.json").read_text()
EXAMPLE = (ARE_DATA / "documentation_complete_example.json").read_text()


def summary(events: Any) -> list[tuple[str, str, float, str, str]]:
    return [
        (e.event_id, e.event_type.name, e.event_time, e.app_name(), e.function_name())
        for e in events
    ]


@pytest.mark.parametrize("text", [MEETING, TUTORIAL], ids=["meeting", "tutorial"])
def test_real_exports_import_and_run_like_are_ran_them(text: str) -> None:
    scenario, completed, world_logs = JsonScenarioImporter(are_registry()).import_from_json(text)
    assert scenario.import_report is not None and scenario.import_report.summary() == ""
    env = run_in_oracle_mode(scenario)
    # Same events at the same times as in ARE's own run recorded in the file.
    assert summary(env.event_log) == summary(completed)
    assert [e.get_args() for e in env.event_log] == [e.get_args() for e in completed]
    assert world_logs == []


def test_real_export_details_are_read() -> None:
    scenario, completed, _ = JsonScenarioImporter(are_registry()).import_from_json(MEETING)
    assert scenario.scenario_id == "meeting_request_001"
    assert scenario.start_time == 1795237245.465631
    oracle = scenario.events[1]
    assert isinstance(oracle, OracleEvent) and oracle.event_relative_time == 3.0
    assert [d.event_id for d in oracle.dependencies] == ["user_ask"]
    assert completed[0].get_args()["attachments"] is None
    # ARE wrote this dict with str(); it is read back as the dict it was.
    assert completed[1].metadata.return_value["current_weekday"] == "Saturday"
    assert completed[2].metadata.return_value is None


def test_unknown_value_types_are_kept_verbatim() -> None:
    scenario, completed, _ = JsonScenarioImporter(are_registry()).import_from_json(TUTORIAL)
    email = completed[2].get_args()["email"]
    assert isinstance(email, OpaqueValue) and email.value_type == "Email"
    exported = JsonScenarioExporter(are_registry()).export_to_json(
        Environment(), scenario, scenario.scenario_id, completed_events=completed, indent=2
    )
    assert '"value_type": "Email"' in exported


def test_real_export_reexports_in_are_shape() -> None:
    scenario, completed, _ = JsonScenarioImporter(are_registry()).import_from_json(MEETING)
    exported = JsonScenarioExporter(are_registry()).export_to_json(
        Environment(), scenario, scenario.scenario_id, completed_events=completed, indent=2
    )
    original, again = json.loads(MEETING), json.loads(exported)
    # Only ARE's Python-syntax return value is rewritten, as JSON.
    original["completed_events"][1]["metadata"]["return_value"] = None
    again["completed_events"][1]["metadata"]["return_value"] = None
    assert again == original
    ExportedTrace.model_validate_json(exported)


def test_missing_app_classes_are_named_all_at_once() -> None:
    with pytest.raises(ScenarioFormatError) as caught:
        JsonScenarioImporter(AppRegistry()).import_from_json(MEETING, strict_apps=True)
    message = str(caught.value)
    assert message.startswith("apps[0].class_name: unknown app classes: ")
    for name in ("AgentUserInterface (apps[0])", "SystemApp (apps[1])", "CalendarApp (apps[2])"):
        assert name in message
    assert "apps_to_skip" in message


def test_unknown_app_classes_are_kept_as_written_and_not_run() -> None:
    """ARE's default: the file imports; its unknown apps stay as records, written back."""
    scenario, completed, _ = JsonScenarioImporter(AppRegistry()).import_from_json(MEETING)
    report = scenario.import_report
    assert report is not None
    assert report.unknown_apps == ["AgentUserInterface", "SystemApp", "CalendarApp"]
    assert scenario.apps == [] and scenario.events == []
    assert [app.name for app in scenario.serialized_apps or []] == report.unknown_apps
    # History stays: the completed events are records without live apps.
    assert [e.event_id for e in completed] == ["user_ask", "oracle_time", "oracle_reply"]
    assert all(e.action is None or e.action.app is None for e in completed)
    exported = JsonScenarioExporter().export_to_json(Environment(), scenario, "meeting")
    assert json.loads(exported)["apps"] == json.loads(MEETING)["apps"]


def test_skipped_apps_drop_their_events_and_say_so(caplog: pytest.LogCaptureFixture) -> None:
    importer = JsonScenarioImporter(are_registry())
    with caplog.at_level(logging.WARNING):
        scenario, completed, _ = importer.import_from_json(MEETING, apps_to_skip=["SystemApp"])
    report = scenario.import_report
    assert report is not None
    assert report.skipped_apps == ["SystemApp"]
    assert report.dropped_event_ids == [
        "oracle_time (calls skipped app SystemApp)",
        "oracle_reply (depends on dropped oracle_time)",
    ]
    assert [e.event_id for e in scenario.events] == ["user_ask"]
    assert [e.event_id for e in completed] == ["user_ask"]
    assert report.dropped_completed_event_ids == [
        "oracle_time (its event was dropped)",
        "oracle_reply (its event was dropped)",
    ]
    assert "skipped apps: SystemApp" in caplog.text
    assert [a.name for a in scenario.apps or []] == ["AgentUserInterface", "CalendarApp"]


def test_apps_to_keep_keeps_only_those() -> None:
    scenario, _, _ = JsonScenarioImporter(are_registry()).import_from_json(
        MEETING, apps_to_keep=["AgentUserInterface", "SystemApp"]
    )
    assert [a.name for a in scenario.apps or []] == ["AgentUserInterface", "SystemApp"]
    assert scenario.import_report is not None
    assert scenario.import_report.skipped_apps == ["CalendarApp"]


def test_documentation_example_imports_with_unknown_apps_skipped() -> None:
    importer = JsonScenarioImporter(AppRegistry())
    with pytest.raises(ScenarioFormatError, match=r"apps\[0\].class_name: unknown app classes"):
        importer.import_from_json(EXAMPLE, strict_apps=True)
    scenario, completed, _ = importer.import_from_json(EXAMPLE, skip_unknown_apps=True)
    report = scenario.import_report
    assert report is not None
    assert report.skipped_apps == ["EmailApp", "NotificationApp"]
    assert report.dropped_event_ids == ["reminder_001 (calls unknown app NotificationApp)"]
    assert report.normalisations
    assert scenario.scenario_id == "email_apology_001"
    assert scenario.seed == 12345 and scenario.duration == 300.0
    assert scenario.tags == ("email", "communication", "customer-service")
    assert scenario.hints is not None and scenario.hints[0].content.startswith("Check")
    assert scenario.context is not None and completed == []
    run_in_oracle_mode(scenario)


def example_registry() -> AppRegistry:
    """A registry that has the documentation example's EmailApp (a stand-in)."""
    registry = are_registry()
    registry.register(EmailClientApp, "are.simulation.apps.email.EmailApp")
    return registry


def test_documentation_example_event_of_an_unlisted_app_is_a_clear_error() -> None:
    # Its one event calls NotificationApp, which its "apps" do not list.
    with pytest.raises(ScenarioFormatError) as caught:
        JsonScenarioImporter(example_registry()).import_from_json(EXAMPLE)
    assert str(caught.value) == (
        "events[0].action.app: no app 'NotificationApp' in this scenario's apps (EmailApp); "
        "leave out its events with apps_to_skip=['NotificationApp'] or lenient=True"
    )


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"lenient": True}, "calls unknown app NotificationApp"),
        ({"apps_to_skip": ["NotificationApp"]}, "calls skipped app NotificationApp"),
        ({"apps_to_keep": ["EmailApp"]}, "calls skipped app NotificationApp"),
    ],
    ids=["lenient", "apps_to_skip", "apps_to_keep"],
)
def test_documentation_example_imports_without_the_unlisted_app(
    options: dict[str, Any], reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    importer = JsonScenarioImporter(example_registry())
    with caplog.at_level(logging.WARNING):
        scenario, _, _ = importer.import_from_json(EXAMPLE, **options)
    report = scenario.import_report
    assert report is not None
    assert report.skipped_apps == ["NotificationApp"]
    assert report.dropped_event_ids == [f"reminder_001 ({reason})"]
    # The same warning as for the events of any skipped app.
    assert "skipped apps: NotificationApp" in caplog.text
    assert f"dropped events: reminder_001 ({reason})" in caplog.text
    [email] = scenario.apps or []
    assert (
        email.name == "EmailApp"
        and email.get_state() == json.loads(EXAMPLE)["apps"][0]["app_state"]
    )
    assert scenario.events == []
    run_in_oracle_mode(scenario)


def test_lenient_also_drops_completed_events_of_unlisted_apps_and_their_dependants() -> None:
    doc = json.loads(MEETING)
    doc["events"][1]["action"]["app"] = "ClockApp"
    doc["completed_events"][1]["action"]["app"] = "ClockApp"
    importer = JsonScenarioImporter(are_registry())
    with pytest.raises(ScenarioFormatError, match="no app 'ClockApp'"):
        importer.import_from_json(json.dumps(doc))
    scenario, completed, _ = importer.import_from_json(json.dumps(doc), lenient=True)
    assert [e.event_id for e in scenario.events] == ["user_ask"]
    assert [e.event_id for e in completed] == ["user_ask"]
    assert scenario.import_report is not None
    assert scenario.import_report.skipped_apps == ["ClockApp"]
    # Unlike skip_unknown_apps, lenient leaves out no app the file lists.
    assert [a.name for a in scenario.apps or []] == [
        "AgentUserInterface",
        "SystemApp",
        "CalendarApp",
    ]


def test_benchmark_import_carries_hugging_face_metadata() -> None:
    doc = json.loads(MEETING)
    doc["metadata"]["definition"]["hf_metadata"] = {"dataset": "d", "split": "s"}
    scenario, _, _ = JsonScenarioImporter(are_registry()).import_from_json_to_benchmark(
        json.dumps(doc)
    )
    assert isinstance(scenario, BenchmarkScenarioImportedFromJson)
    assert scenario.hf_metadata is not None and scenario.hf_metadata.dataset == "d"
    exported = JsonScenarioExporter(are_registry()).export_to_json(
        Environment(), scenario, scenario.scenario_id, export_apps=False
    )
    assert json.loads(exported)["apps"] == []
    assert json.loads(exported)["metadata"]["definition"]["hf_metadata"]["split"] == "s"


def test_completed_oracle_events_keep_their_comparator() -> None:
    doc = json.loads(MEETING)
    doc["events"][1]["event_time_comparator"] = "GREATER_THAN"
    doc["completed_events"][1]["class_name"] = "CompletedOracleEvent"
    _, completed, _ = JsonScenarioImporter(are_registry()).import_from_json(json.dumps(doc))
    assert isinstance(completed[1], CompletedOracleEvent)
    assert completed[1].event_time_comparator is not None
    assert completed[1].event_time_comparator.name == "GREATER_THAN"


def edit(path: list[str | int], value: Any, text: str = MEETING) -> str:
    doc: Any = json.loads(text)
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return json.dumps(doc)


BAD = [
    ("dup id", edit(["events", 2, "event_id"], "user_ask"), "events[2].event_id", "duplicate"),
    (
        "unknown dependency",
        edit(["events", 2, "dependencies"], ["oracle_time", "nope"]),
        "events[2].dependencies[1]",
        "unknown event id 'nope'",
    ),
    (
        "cycle",
        edit(["events", 0, "dependencies"], ["oracle_reply"]),
        "events[",
        "dependency cycle",
    ),
    (
        "self cycle",
        edit(["events", 0, "dependencies"], ["user_ask"]),
        "events[0].dependencies[0]",
        "user_ask -> user_ask",
    ),
    ("event class", edit(["events", 0, "class_name"], "Thing"), "events[0].class_name", "Thing"),
    ("event type", edit(["events", 0, "event_type"], "GOD"), "events[0].event_type", "GOD"),
    (
        "app of event",
        edit(["events", 0, "action", "app"], "Nowhere"),
        "events[0].action.app",
        "no app 'Nowhere'",
    ),
    (
        "method",
        edit(["events", 1, "action", "function"], "fly"),
        "events[1].action.function",
        "no method 'fly'",
    ),
    (
        "arg name",
        edit(["events", 2, "action", "args", 0, "name"], "colour"),
        "events[2].action.args",
        "colour",
    ),
    (
        "arg value",
        edit(
            ["events", 0, "action", "args", 0],
            {"name": "content", "value": "x", "value_type": "int"},
        ),
        "events[0].action.args[0].value",
        "not an int",
    ),
    (
        "comparator",
        edit(["events", 1, "event_time_comparator"], "SOON"),
        "events[1].event_time_comparator",
        "SOON",
    ),
    (
        "operation",
        edit(["events", 0, "action", "operation_type"], "NOTIFY"),
        "events[0].action.operation_type",
        "NOTIFY",
    ),
    (
        "hint",
        edit(
            ["metadata", "definition", "hints"],
            [{"hint_type": "task", "content": "c", "associated_event_id": "zzz"}],
        ),
        "metadata.definition.hints[0].associated_event_id",
        "zzz",
    ),
    (
        "completed dependency",
        edit(["completed_events", 1, "dependencies"], ["ghost"]),
        "completed_events[1].dependencies[0]",
        "ghost",
    ),
    (
        "condition without check",
        edit(
            ["events", 2],
            {
                "class_name": "ConditionCheckEvent",
                "event_type": "CONDITION",
                "event_time": None,
                "event_id": "c",
                "dependencies": [],
                "event_relative_time": 1.0,
            },
        ),
        "events[2].check",
        "package.module:function",
    ),
    (
        "condition reference",
        edit(
            ["events", 2],
            {
                "class_name": "ConditionCheckEvent",
                "event_type": "CONDITION",
                "event_time": None,
                "event_id": "c",
                "dependencies": [],
                "event_relative_time": 1.0,
                "check": {"condition": "scenario_json_apps:nothing_here"},
            },
        ),
        "events[2].check.condition",
        "no attribute",
    ),
    (
        "condition reference into a module nobody named",
        edit(
            ["events", 2],
            {
                "class_name": "ConditionCheckEvent",
                "event_type": "CONDITION",
                "event_time": None,
                "event_id": "c",
                "dependencies": [],
                "event_relative_time": 1.0,
                "check": {"condition": "this:s"},
            },
        ),
        "events[2].check.condition",
        "imports nothing",
    ),
    ("app state", edit(["apps", 0, "app_state"], [1]), "apps[0].app_state", "valid dictionary"),
    ("duplicate app", edit(["apps", 2, "name"], "SystemApp"), "apps[2].name", "duplicate"),
]


@pytest.mark.parametrize(("text", "where", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_files_fail_with_one_error_naming_the_path(text: str, where: str, words: str) -> None:
    with pytest.raises(ScenarioFormatError) as caught:
        JsonScenarioImporter(make_test_registry()).import_from_json(text)
    assert format_json_path(caught.value.path).startswith(where)
    assert words in str(caught.value)
