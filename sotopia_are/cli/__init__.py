"""The `sotopia-are` command line: one Typer app, one module per command group.

Every command has ``--help``. Exit codes: 0 success, 1 a user or input error (one
``error: …`` line on stderr) or an episode that failed or could not be rated, 2 a usage
error, 130 Ctrl-C, 141 a closed output pipe (see :mod:`sotopia_are.cli.common`).
"""

import gc

from sotopia_are import _CollectorPaused

# The commands' modules load typer, rich and the option groups: some 500 M instructions
# of every command's start, 25 M of which were collections.
with _CollectorPaused():
    import typer

    from sotopia_are.cli.agreement import agreement
    from sotopia_are.cli.batch import batch
    from sotopia_are.cli.benchmark import benchmark
    from sotopia_are.cli.common import BUG_NOTE
    from sotopia_are.cli.demo import demo
    from sotopia_are.cli.evaluate import evaluate
    from sotopia_are.cli.host import host_command
    from sotopia_are.cli.parse import parse
    from sotopia_are.cli.run import run
    from sotopia_are.cli.scenario import scenario_app
    from sotopia_are.cli.show import show
    from sotopia_are.cli.store import export, import_, list_
    from sotopia_are.cli.training import training_data
    from sotopia_are.cli.view import view

__all__ = ["app", "main"]

app = typer.Typer(
    name="sotopia-are",
    help="Multi-agent social simulation: run episodes, parse scripts, evaluate social goals.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Click's plain help: it wraps every line to the terminal (rich panels cut them at 80
    # columns) and reflows the docstrings' hard-wrapped paragraphs.
    rich_markup_mode=None,
)
app.command("demo")(demo)
app.command("run")(run)
app.command("batch")(batch)
app.command("benchmark")(benchmark)
app.command("parse")(parse)
app.command("evaluate")(evaluate)
app.command("agreement")(agreement)
app.command("show")(show)
app.command("list")(list_)
app.command("export")(export)
app.command("import")(import_)
app.command("training-data")(training_data)
app.command("view")(view)
app.command("host")(host_command)
app.add_typer(scenario_app, name="scenario")


def main() -> None:
    """Entry point of the `sotopia-are` console script. An exception that escapes a
    command is a bug (the library's own errors end as ``error: …`` lines): its traceback
    is printed with :data:`~sotopia_are.cli.common.BUG_NOTE` under it. Meant to be the
    process's last act: what is alive when it returns is frozen out of garbage
    collection (``gc.freeze``) for a quick exit, so a script that goes on after it should
    call the Typer ``app`` instead."""
    try:
        app()
    except Exception as error:
        if BUG_NOTE not in getattr(error, "__notes__", ()):
            error.add_note(BUG_NOTE)
        raise
    finally:
        # The interpreter's last collection walks every object still alive: after a batch
        # of 1,000 episodes, 0.12 s of a command whose work is done. Frozen objects are
        # left out of it; the process ends next, so nothing is lost by not collecting them.
        gc.freeze()
