"""Exporting: values that cannot be written fail at export time, files are written whole."""

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from scenario_json_apps import Echo, always_true, make_test_registry

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.apps.registry import AppRegistry, register_app_class
from sotopia_are.simulation.data_handler.errors import ScenarioExportError, ScenarioFormatError
from sotopia_are.simulation.data_handler.exporter import ExportOptions, JsonScenarioExporter
from sotopia_are.simulation.data_handler.importer import JsonScenarioImporter
from sotopia_are.simulation.environment import Environment
from sotopia_are.simulation.scenarios.scenario import Scenario
from sotopia_are.simulation.types import (
    AbstractEvent,
    Action,
    ConditionCheckEvent,
    Event,
    ValidationEvent,
)


def scenario_with(event: AbstractEvent, app: App | None = None) -> Scenario:
    return Scenario(scenario_id="s", apps=[app or Echo()], events=[event])


def echo_event(echo: Echo, **args: Any) -> Event:
    return Event(action=Action(function=echo.echo, args=args, app=echo))


def export(scenario: Scenario, registry: AppRegistry | None = None) -> str:
    exporter = JsonScenarioExporter(registry or make_test_registry())
    return exporter.export_to_json(Environment(), scenario, scenario.scenario_id)


@pytest.mark.parametrize(
    ("value", "words"),
    [((1, 2), "tuple"), ({1}, "set"), (float("nan"), "finite"), ({"k": object()}, "object")],
)
def test_unrepresentable_args_fail_at_export(value: Any, words: str) -> None:
    echo = Echo()
    with pytest.raises(ScenarioExportError, match=f"arg 'a'.*{words}"):
        export(scenario_with(echo_event(echo, a=value), echo))


def test_lambda_and_closure_conditions_fail_at_export() -> None:
    def local(env: Any) -> bool:
        return True

    for condition in (lambda env: True, local):
        with pytest.raises(ScenarioExportError, match="lambda or a nested function"):
            export(scenario_with(ConditionCheckEvent.from_condition(condition)))
    with pytest.raises(ScenarioExportError, match="lambda"):
        export(scenario_with(ValidationEvent(milestones=[always_true, lambda env: True])))


def test_unreachable_app_classes_fail_at_export() -> None:
    class LocalApp(App):
        pass

    with pytest.raises(ScenarioExportError, match="register it with register_app_class"):
        export(Scenario(scenario_id="s", apps=[LocalApp()], events=[]))
    registry = AppRegistry()
    registry.register(LocalApp)
    assert json.loads(export(Scenario(scenario_id="s", apps=[LocalApp()]), registry))["apps"] == [
        {"name": "LocalApp", "class_name": "LocalApp", "app_state": None}
    ]


def test_unregistered_importable_apps_are_written_by_path() -> None:
    text = export(Scenario(scenario_id="s", apps=[Echo(name="e1")]), AppRegistry())
    assert json.loads(text)["apps"][0]["class_name"] == "scenario_json_apps.Echo"
    # A path into a module only imports when that module is named (reading runs no code).
    with pytest.raises(ScenarioFormatError, match="imports nothing"):
        JsonScenarioImporter(AppRegistry()).import_from_json(text, strict_apps=True)
    # By default (as ARE) the app is kept as written, unbuilt: still nothing is imported.
    kept, _, _ = JsonScenarioImporter(AppRegistry()).import_from_json(text)
    assert kept.apps == [] and kept.import_report is not None
    assert kept.import_report.unknown_apps == ["e1"]
    modules = [sys.modules[Echo.__module__]]
    scenario, _, _ = JsonScenarioImporter(AppRegistry(), modules).import_from_json(text)
    assert isinstance((scenario.apps or [])[0], Echo)


def test_register_app_class_decorates_into_the_default_registry() -> None:
    from sotopia_are.simulation.apps.registry import default_app_registry

    @register_app_class(name="ScenarioJsonTestOnlyApp")
    class Registered(App):
        pass

    assert default_app_registry.resolve("ScenarioJsonTestOnlyApp") is Registered
    with pytest.raises(ValueError, match="already registered"):
        register_app_class(Echo, name="ScenarioJsonTestOnlyApp")


def test_plain_function_actions_are_written_by_reference() -> None:
    event = Event(action=Action(function=always_true, args={"env": None}))
    data = json.loads(export(scenario_with(event)))
    assert data["events"][0]["action"]["app"] is None
    assert data["events"][0]["action"]["function"] == "scenario_json_apps:always_true"


def test_export_to_file_writes_whole_files_or_nothing(tmp_path: Path) -> None:
    echo = Echo()
    exporter = JsonScenarioExporter(make_test_registry())
    ok, path = exporter.export_to_json_file(
        Environment(), scenario_with(echo_event(echo, a=1), echo), output_dir=str(tmp_path)
    )
    assert ok and path == str(tmp_path / "s.json")
    JsonScenarioImporter(make_test_registry()).import_from_json(Path(path).read_text())
    bad = scenario_with(echo_event(echo, a=(1,)), echo)
    bad.scenario_id = "bad"
    assert exporter.export_to_json_file(Environment(), bad, output_dir=str(tmp_path)) == (
        False,
        None,
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_apps_state_replaces_the_scenario_apps() -> None:
    exporter = JsonScenarioExporter(make_test_registry())
    text = exporter.export_to_json(
        Environment(),
        Scenario(scenario_id="s", apps=[Echo()]),
        "s",
        apps_state={"Echo": {"class_name": "Echo", "serialized_state": '{"calls": 3}'}},
    )
    assert json.loads(text)["apps"] == [
        {"name": "Echo", "class_name": "Echo", "app_state": {"calls": 3}}
    ]
    with pytest.raises(ScenarioExportError, match="serialized_state"):
        exporter.export_to_json(
            Environment(), Scenario(scenario_id="s"), "s", apps_state={"Echo": {"x": 1}}
        )


def test_export_to_json_takes_ares_positional_parameters() -> None:
    exporter = JsonScenarioExporter(make_test_registry())
    scenario = Scenario(scenario_id="s", apps=[Echo()])
    # ARE's order: runner_config, model_id, agent_id, validation_decision, annotation_id,
    # annotator_name, context, comment, indent, apps_state, world_logs, export_apps.
    text = exporter.export_to_json(
        Environment(), scenario, "s", {"r": 1}, "m", "a", "valid", "an", "ann", "ctx", "c",
        None, None, ["log"], True, annotation_date=5.0,
    )  # fmt: skip
    options = ExportOptions(
        runner_config={"r": 1},
        model_id="m",
        agent_id="a",
        validation_decision="valid",
        annotation_id="an",
        annotator_name="ann",
        context="ctx",
        comment="c",
        world_logs=["log"],
        annotation_date=5.0,
    )
    trace = exporter.to_trace(Environment(), scenario, "s", options)
    assert text == trace.model_dump_json()
    metadata = trace.metadata
    assert metadata.simulation is not None and metadata.simulation.model_id == "m"
    assert metadata.annotation.annotator == "ann" and trace.context == "ctx"
    assert trace.world_logs == ["log"] and metadata.runner_config == {"r": 1}
