"""`sotopia-are parse`: read a human-written conversation script and print its actions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from sotopia_are import studies

from .common import fail, printable, read_text

__all__ = ["parse"]


def _as_json(actions: list[studies.ScriptAction]) -> str:
    return json.dumps(
        [
            {
                "turn": item.turn,
                "line": item.line,
                "speaker": item.speaker,
                "action_type": item.action.action_type,
                "argument": item.action.argument,
                "to": item.action.to,
            }
            for item in actions
        ],
        ensure_ascii=False,
        indent=2,
    )


def _as_table(actions: list[studies.ScriptAction], title: str) -> Table:
    table = Table(title=title, show_lines=True)
    for column in ("#", "turn", "line", "speaker", "action", "argument", "to"):
        table.add_column(column, overflow="fold")
    for number, item in enumerate(actions, start=1):
        # Text(), not str: speech like "[action]" must not be read as rich markup.
        table.add_row(
            str(number),
            "" if item.turn is None else str(item.turn),
            str(item.line),
            Text(item.speaker),
            item.action.action_type,
            Text(item.action.argument),
            Text(", ".join(item.action.to or [])),
        )
    return table


def parse(
    file: Annotated[Path, typer.Argument(help="The script file (UTF-8 text).")],
    agents: Annotated[
        str, typer.Option("--agents", "-a", help='The participants, comma-separated: "A,B".')
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the actions as JSON.")] = False,
) -> None:
    """Parse a conversation script (`Turn #1` / `Name said: "…"`, or a screenplay) and
    print its actions; notes on skipped lines and warnings go to stderr."""
    names = [name.strip() for name in agents.split(",") if name.strip()]
    text = read_text(file)
    try:
        parsed = studies.parse_script_notes(text, names)
    except ValueError as exc:  # ScriptParseError, or an unusable --agents list
        fail(f"{file}: {exc}")
    for note in parsed.notes:
        typer.echo(printable(str(note)), err=True)
    actions = parsed.actions
    if as_json:
        typer.echo(_as_json(actions))
    else:
        Console().print(_as_table(actions, f"{file.name}: {len(actions)} actions"))
