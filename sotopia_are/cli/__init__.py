"""The `sotopia-are` command line: one Typer app, one module per command group."""

import typer

__all__ = ["app", "main"]

app = typer.Typer(
    name="sotopia-are",
    help="Multi-agent social simulation: run episodes, parse scripts, evaluate social goals.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def main() -> None:
    """Entry point of the `sotopia-are` console script."""
    app()
