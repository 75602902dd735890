"""The `sotopia-are` command line: one Typer app, one module per command group."""

import typer

from sotopia_are.cli.parse import parse
from sotopia_are.cli.scenario import scenario_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="sotopia-are",
    help="Multi-agent social simulation: run episodes, parse scripts, evaluate social goals.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("parse")(parse)
app.add_typer(scenario_app, name="scenario")


@app.callback()
def _root() -> None:
    # A callback keeps Typer in command-group mode while only one command is registered.
    """Multi-agent social simulation: run episodes, parse scripts, evaluate social goals."""


def main() -> None:
    """Entry point of the `sotopia-are` console script."""
    app()
