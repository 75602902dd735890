"""`sotopia-are scenario validate|run FILE`: check and run scenario JSON files (ARE's format)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from sotopia_are import studies

from .common import cli_errors, fail

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


@scenario_app.command("validate")
def validate(
    file: FileArgument,
    apps: AppsOption = None,
    skip: SkipAppOption = None,
    skip_unknown_apps: SkipUnknownOption = False,
    lenient: LenientOption = False,
) -> None:
    """Check that FILE imports: format, event graph, apps, functions and values."""
    with cli_errors():
        loaded = studies.load_scenario(
            file, apps=apps, skip_apps=skip, skip_unknown_apps=skip_unknown_apps, lenient=lenient
        )
    # What the import left out or changed goes to stderr; stdout is the result.
    if summary := loaded.report.summary():
        typer.echo(summary, err=True)
    scenario = loaded.scenario
    typer.echo(
        f"{file}: valid scenario {scenario.scenario_id!r}: {len(scenario.apps or [])} apps, "
        f"{len(scenario.events)} events, {len(loaded.completed_events)} completed events"
    )


@scenario_app.command("run")
def run(
    file: FileArgument,
    apps: AppsOption = None,
    skip: SkipAppOption = None,
    skip_unknown_apps: SkipUnknownOption = False,
    lenient: LenientOption = False,
) -> None:
    """Run FILE in oracle mode on a virtual clock and print the completed events."""
    with cli_errors():
        done = studies.run_scenario(
            file, apps=apps, skip_apps=skip, skip_unknown_apps=skip_unknown_apps, lenient=lenient
        )
    if summary := done.loaded.report.summary():
        typer.echo(summary, err=True)
    Console().print(_table(done))
    if done.failure is not None:
        fail(done.failure)


def _table(done: studies.ScenarioRun) -> Table:
    """One row per completed event; times are seconds from the scenario's start."""
    events, scenario = done.events, done.loaded.scenario
    start = float(scenario.start_time or 0)
    table = Table(title=f"{scenario.scenario_id}: {len(events)} events", show_lines=True)
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
