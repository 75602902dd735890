"""`sotopia-are scenario validate|run FILE`: check and run scenario JSON files (ARE's format)."""

import importlib
import importlib.util
import inspect
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.apps.registry import AppRegistry, default_app_registry
from sotopia_are.simulation.data_handler.errors import ScenarioFormatError
from sotopia_are.simulation.data_handler.importer import JsonScenarioImporter
from sotopia_are.simulation.environment import EnvironmentState, run_in_oracle_mode
from sotopia_are.simulation.scenarios.scenario_imported_from_json import (
    ScenarioImportedFromJson,
)
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import EpisodeSpec

from .common import fail, read_text

__all__ = ["scenario_app"]

scenario_app = typer.Typer(
    name="scenario",
    help="Check and run scenario JSON files (Meta ARE's ExportedTrace format).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

FileArgument = Annotated[Path, typer.Argument(help="The scenario JSON file.")]
AppsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--apps",
        help="A Python file or module whose App classes the file names by class name (repeatable).",
    ),
]
SkipAppOption = Annotated[
    list[str] | None,
    typer.Option(
        "--skip-app",
        "--skip-apps",
        help="Leave out this app and its events, listed in the file or not (repeatable).",
    ),
]
SkipUnknownOption = Annotated[
    bool,
    typer.Option("--skip-unknown-apps", help="Leave out apps whose classes are not available."),
]
LenientOption = Annotated[
    bool,
    typer.Option(
        "--lenient",
        help="Drop, with a warning, events that call an app the file's apps do not list "
        "(ARE's documentation example does) instead of refusing the file.",
    ),
]


def _load_module(spec: str) -> ModuleType:
    if spec.endswith(".py") or Path(spec).is_file():
        path = Path(spec)
        found = importlib.util.spec_from_file_location(path.stem, path)
        if found is None or found.loader is None or not path.is_file():
            fail(f"--apps {spec}: no such Python file")
        loaded = sys.modules.get(path.stem)
        if loaded is not None and Path(getattr(loaded, "__file__", "")).resolve() == path.resolve():
            return loaded
        module = importlib.util.module_from_spec(found)
        # Registered by name so that 'module:function' references into it resolve.
        sys.modules[path.stem] = module
        found.loader.exec_module(module)
        return module
    return importlib.import_module(spec)


def _registry(app_sources: list[str]) -> tuple[AppRegistry, list[ModuleType]]:
    """The default registry plus the App classes of the ``--apps`` modules, and those
    modules: the only ones a file's references may point into."""
    registry = default_app_registry.copy()
    modules = []
    for source in app_sources:
        try:
            module = _load_module(source)
        except Exception as exc:
            fail(f"--apps {source}: {type(exc).__name__}: {exc}")
        modules.append(module)
        for _, member in inspect.getmembers(module, inspect.isclass):
            if issubclass(member, App) and member.__module__ == module.__name__:
                try:
                    registry.register(member)
                except ValueError as exc:
                    fail(f"--apps {source}: {exc}")
    return registry, modules


def _import(
    file: Path,
    apps: list[str] | None,
    skip_app: list[str] | None,
    skip_unknown_apps: bool,
    lenient: bool,
) -> tuple[ScenarioImportedFromJson, list[CompletedEvent]]:
    text = read_text(file)
    importer = JsonScenarioImporter(*_registry(apps or []))
    # The report is printed below; the importer's log warning would repeat it.
    importer_log = logging.getLogger(JsonScenarioImporter.__module__)
    quiet = logging.Filter("nothing")
    importer_log.addFilter(quiet)
    try:
        scenario, completed, _ = importer.import_from_json(
            text, apps_to_skip=skip_app, skip_unknown_apps=skip_unknown_apps, lenient=lenient
        )
    except ScenarioFormatError as exc:
        hint = ""
        if "unknown app classes" in exc.problem:
            hint = "\nhint: load them with --apps FILE, or use --skip-app / --skip-unknown-apps"
        elif "in this scenario's apps" in exc.problem:
            hint = "\nhint: leave out that app's events with --skip-app NAME or --lenient"
        elif _is_episode_spec(text):
            hint = (
                "\nhint: this file looks like an episode spec, not ARE scenario JSON: run it "
                "with 'sotopia-are run FILE' (or 'sotopia-are batch FILE')"
            )
        fail(f"{file}: {exc}{hint}")
    finally:
        importer_log.removeFilter(quiet)
    report = scenario.import_report
    if report is not None and report.summary():
        typer.echo(report.summary(), err=True)
    return scenario, completed


def _is_episode_spec(text: str) -> bool:
    """Whether ``text`` is a valid social episode spec (``run``'s input)."""
    try:
        EpisodeSpec.model_validate_json(text)
    except ValidationError:
        return False
    return True


@scenario_app.command("validate")
def validate(
    file: FileArgument,
    apps: AppsOption = None,
    skip_app: SkipAppOption = None,
    skip_unknown_apps: SkipUnknownOption = False,
    lenient: LenientOption = False,
) -> None:
    """Check that FILE imports: format, event graph, apps, functions and values."""
    scenario, completed = _import(file, apps, skip_app, skip_unknown_apps, lenient)
    typer.echo(
        f"{file}: valid scenario {scenario.scenario_id!r}: {len(scenario.apps or [])} apps, "
        f"{len(scenario.events)} events, {len(completed)} completed events"
    )


@scenario_app.command("run")
def run(
    file: FileArgument,
    apps: AppsOption = None,
    skip_app: SkipAppOption = None,
    skip_unknown_apps: SkipUnknownOption = False,
    lenient: LenientOption = False,
) -> None:
    """Run FILE in oracle mode on a virtual clock and print the completed events."""
    scenario, _ = _import(file, apps, skip_app, skip_unknown_apps, lenient)
    env = run_in_oracle_mode(scenario)
    events = env.event_log.list_view()
    start = float(scenario.start_time or 0)
    Console().print(_table(events, start, f"{scenario.scenario_id}: {len(events)} events"))
    if env.state is EnvironmentState.FAILED:
        reason = f": {env.exception}" if env.exception is not None else " (a validation failed)"
        fail(f"the run failed{reason}")


def _table(events: list[CompletedEvent], start: float, title: str) -> Table:
    table = Table(title=title, show_lines=True)
    for column in ("#", "t+s", "event", "type", "call", "args", "result"):
        table.add_column(column, overflow="fold")
    for number, event in enumerate(events, start=1):
        call = ".".join(part for part in (event.app_name(), event.function_name()) if part)
        outcome = event.metadata.exception or _short(event.metadata.return_value)
        # Text(), not str: values like "[b]" must not be read as rich markup.
        table.add_row(
            str(number),
            f"{(event.event_time or 0) - start:g}",
            Text(event.event_id),
            event.event_type.name,
            Text(call),
            Text(", ".join(f"{k}={_short(v)}" for k, v in event.get_args().items())),
            Text(outcome),
        )
    return table


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."
