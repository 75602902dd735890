"""Helpers shared by the CLI commands: errors, options, the store, models and files.

Exit codes of every command: 0 success, 1 a user or input error (one ``error: …`` line
on stderr, never a traceback) or an episode that failed or could not be rated, 2 a usage
error (Typer's own) or a model that cannot be called as configured (one ``error: …`` line,
found by the preflight before any episode is stored), 130 Ctrl-C, 141 the reader of the
output went away (``| head``). :func:`cli_errors` turns the library's errors
(:class:`~sotopia_are.SotopiaAreError`) into exit 1, a configuration error into exit 2;
any other exception is a bug and keeps its traceback, with a note asking to report it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

import sotopia_are as sa

__all__ = [
    "BROKEN_PIPE_EXIT",
    "BUG_NOTE",
    "CONFIGURATION_EXIT",
    "INTERRUPTED_EXIT",
    "cli_errors",
    "console",
    "describe_validation",
    "fail",
    "load_spec",
    "print_scores",
    "printable",
    "read_text",
]

INTERRUPTED_EXIT = 130
"""The exit code after Ctrl-C (128 + SIGINT, as shells report it)."""

console = Console(highlight=False)
"""Standard output for tables and headings; plain text goes through ``typer.echo``."""


CONFIGURATION_EXIT = 2
"""The exit code when a model cannot be called as configured (a usage error, as Typer's
own are: the command line or the environment has to change, not the data)."""


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code``."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=code)


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` safe to print on a terminal: every character that is not printable (the
    ESC of ANSI sequences, newlines, carriage returns, bidi overrides, other control and
    format characters) is written as its Python escape (``\\x1b``, ``\\n``, ``\\u202e``);
    letters of every script stay as they are. ``keep_newlines`` keeps ``\\n`` (for text
    that is meant to span lines, like a transcript)."""
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() or (keep_newlines and char == "\n") else repr(char)[1:-1]
        for char in text
    )


def describe_validation(error: ValidationError) -> str:
    """A pydantic validation error on one line: ``field: problem; …``."""
    return "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or '(root)'}: {item['msg']}"
        for item in error.errors()
    )


@contextmanager
def cli_errors() -> Iterator[None]:
    """Turn the library's errors into :func:`fail`; anything else is a bug.

    A :class:`~sotopia_are.SotopiaAreError` (bad input, an unreachable server, a missing
    episode, a model that fails) is the user's to fix: exit 1, or
    :data:`CONFIGURATION_EXIT` for a :class:`~sotopia_are.llm.ConfigurationError` from the
    preflight. So are a value a pydantic model refuses and a file the system refuses
    (missing, unreadable). Any other exception keeps its traceback, with
    :data:`BUG_NOTE` under it.
    """
    try:
        yield
    except BrokenPipeError:
        _quiet_broken_pipe()
    except ValidationError as error:
        # The library's values (specs, profiles, configurations) are pydantic models: one
        # that refuses what the user gave raises pydantic's own error, no SotopiaAreError.
        fail(describe_validation(error))
    except sa.RecordNotFoundError as error:
        fail(
            f"{error}; see 'sotopia-are list'"
            if str(error).startswith("no episode")
            else str(error)
        )
    except sa.ConfigurationError as error:
        fail(str(error), CONFIGURATION_EXIT)
    except sa.SotopiaAreError as error:
        fail(str(error))
    except FileNotFoundError as error:
        fail(f"{error.filename}: no such file")
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        fail(f"{where}{error.strerror or error}")
    except Exception as error:
        error.add_note(BUG_NOTE)
        raise


BUG_NOTE = (
    f"This is a bug in sotopia-are {sa.__version__}, not a mistake in your input: "
    "please report it, with the traceback above and the command you ran."
)
"""The line under the traceback of an exception that is no library error."""


BROKEN_PIPE_EXIT = 141
"""The exit code when the output's reader went away (128 + SIGPIPE, as a shell reports a
program that SIGPIPE killed, e.g. ``cat big | head``)."""


def _quiet_broken_pipe() -> NoReturn:
    """Exit :data:`BROKEN_PIPE_EXIT` without a message: the reader (``| head``) chose to
    stop. Standard output is pointed at /dev/null first, or Python's final flush of it
    would fail again and print a warning."""
    # A captured stdout (tests) has no file descriptor; nothing would flush to a pipe then.
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    raise typer.Exit(code=BROKEN_PIPE_EXIT)


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; :func:`fail` naming the file if it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        fail(f"{path}: no such file")
    except OSError as error:
        fail(f"cannot read {path}: {error.strerror or error}")
    except UnicodeDecodeError as error:
        fail(f"{path} is not UTF-8 text: {error.reason} at byte {error.start}")


def load_spec(path: Path) -> sa.EpisodeSpec:
    """The episode spec (``EpisodeSpec`` JSON, as in ``examples/scenarios/``) in ``path``."""
    text = read_text(path)
    try:
        return sa.EpisodeSpec.model_validate_json(text)
    except ValidationError as error:
        fail(f"{path} is not a valid episode spec: {describe_validation(error)}")


def print_scores(scores: Mapping[str, Mapping[str, float]], title: str = "Scores") -> None:
    """A table of the dimension scores: one row per dimension, one column per agent
    (narrow enough for a terminal with any number of dimensions)."""
    if not scores:
        return
    dimensions: list[str] = []
    for by_dimension in scores.values():
        for name in by_dimension:
            if name not in dimensions and name != "overall_score":
                dimensions.append(name)
    typer.echo(title)  # a plain line: a table's title wraps to the table's width
    table = Table()
    table.add_column("dimension")
    for agent in scores:
        table.add_column(agent, justify="right")
    for name in [*dimensions, "overall_score"]:
        cells = [scores[agent].get(name) for agent in scores]
        table.add_row(
            name, *("" if cell is None else f"{cell:.2f}".rstrip("0").rstrip(".") for cell in cells)
        )
    console.print(table)
