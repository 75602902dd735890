"""`sotopia-are list | export | import`: the stored episodes and profiles, in and out.

Episodes and profiles go out and in as JSONL (one record a line; SOTOPIA's profile files
are read too); an episode also exports as ARE scenario JSON, and an ARE file written by
``export`` (or ``demo``) imports back as an episode.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from sotopia_are.record import EpisodeSummary
from sotopia_are.simulation.files import write_text_atomically
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import EpisodeExistsError, UnreadableRecordError
from sotopia_are.studies import (
    ExportFormat,
    ImportKind,
    export_are_files,
    export_text,
    import_file,
    selected_episodes,
)

from .common import cli_errors, fail, printable, read_text
from .options import StoreOptions, with_store

__all__ = ["export", "import_", "list_"]


def _row(summary: EpisodeSummary) -> list[str]:
    when = summary.created_at
    overall = ", ".join(
        f"{printable(agent.split()[0])} {score:.1f}" for agent, score in summary.overall.items()
    )
    return [
        printable(summary.episode_id),
        summary.status.value,
        printable(summary.tag) or "-",
        printable(summary.scenario_id) or "-",
        f"{summary.event_count} events",
        printable(", ".join(sorted({m for m in summary.models if m}))) or "scripted",
        datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M") if when else "",
        f"overall: {overall}" if overall else "",
    ]


@with_store
def list_(
    where: StoreOptions,
    tag: Annotated[str | None, typer.Option("--tag", help="Only episodes with this tag.")] = None,
    scenario: Annotated[
        str | None, typer.Option("--scenario", help="Only episodes of this scenario id.")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Only episodes where an agent used this model.")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Only episodes with this participant.")
    ] = None,
    status: Annotated[
        EpisodeStatus | None, typer.Option("--status", help="Only episodes with this status.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most this many.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON summary a line.")] = False,
) -> None:
    """List stored episodes, oldest first, filtered by tag, scenario, model, agent, status.

    A stored key that is not a readable episode gets one ``warning: skipped KEY: reason``
    line on stderr; the others are still listed."""
    with where.open() as store, cli_errors():
        skipped: list[UnreadableRecordError] = []
        filters = {"tag": tag, "scenario": scenario, "model": model, "agent": agent}
        summaries = store.summaries(
            **filters, status=status, limit=limit, on_unreadable=skipped.append
        )
        for error in skipped:
            typer.echo(
                f"warning: skipped {printable(error.key)}: {printable(error.reason)}", err=True
            )
        if as_json:
            for summary in summaries:
                typer.echo(summary.model_dump_json())
            return
        if not summaries:
            filtered = any(filters.values()) or status is not None
            typer.echo("no episodes match" if filtered else f"no episodes in {store.location}")
            return
        # Plain aligned columns, not a table: ids stay whole and lines grep well.
        rows = [_row(summary) for summary in summaries]
        widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
        typer.echo(f"{len(summaries)} episodes in {store.location}")
        for row in rows:
            typer.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


@with_store
def export(
    where: StoreOptions,
    episode_id: Annotated[
        str | None,
        typer.Argument(help="The episode to export (or --tag, or --all).", show_default=False),
    ] = None,
    tag: Annotated[
        str | None,
        typer.Option("--tag", help="Export every episode with this tag.", show_default=False),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Export every stored episode.")] = False,
    format_: Annotated[
        ExportFormat,
        typer.Option("--format", "-f", help="jsonl: records with events and calls; are: ARE JSON."),
    ] = ExportFormat.jsonl,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="The file to write (default: stdout); for many episodes as ARE JSON, a "
            "directory (one <id>.json each).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Export stored episodes as JSONL (re-importable with 'import') or ARE scenario JSON.

    Files are written whole or not at all: everything is read from the store first, then
    each file goes to a temporary file renamed over the target."""
    if sum((episode_id is not None, tag is not None, all_)) != 1:
        fail("give an EPISODE_ID, --tag TAG or --all (one of the three)")
    with where.open() as store, cli_errors():
        ids = (
            [store.load(episode_id).episode_id] if episode_id else selected_episodes(store, tag=tag)
        )
        if format_ is ExportFormat.jsonl or episode_id is not None:
            _write(output, export_text(store, ids, format_))
            _done(f"exported {len(ids)} episodes as {format_.value}", output)
        elif output is None:
            fail("many episodes as ARE JSON are one file each: give a directory with -o")
        else:
            export_are_files(store, ids, output)
            _done(f"exported {len(ids)} episodes as ARE JSON", output)


def _write(path: Path | None, text: str) -> None:
    """``text`` to stdout, or atomically to ``path`` (a newline ends a single document)."""
    ending = "" if text.endswith("\n") or not text else "\n"
    if path is None or str(path) == "-":
        typer.echo(text + ending, nl=False)
    else:
        write_text_atomically(str(path), text + ending)


def _done(message: str, output: Path | None) -> None:
    # Reports go to stderr when the data itself goes to stdout.
    if output is None or str(output) == "-":
        typer.echo(message, err=True)
    else:
        typer.echo(f"{message} to {output}")


@with_store
def import_(
    where: StoreOptions,
    file: Annotated[
        Path,
        typer.Argument(help="A JSONL file of episodes or profiles, or an episode's ARE JSON file."),
    ],
    kind: Annotated[
        ImportKind,
        typer.Option("--kind", help="What the file holds (a script is never guessed)."),
    ] = ImportKind.auto,
    script: Annotated[
        bool, typer.Option("--script", help="FILE is a written script (as --kind script).")
    ] = False,
    spec_file: Annotated[
        Path | None,
        typer.Option(
            "--spec",
            help="A script's context: an episode spec or background JSON (default: its "
            "own preamble).",
            show_default=False,
        ),
    ] = None,
    replace: Annotated[
        bool,
        typer.Option("--replace", help="Overwrite stored episodes with the same ids."),
    ] = False,
) -> None:
    """Import episodes or profiles (JSONL; SOTOPIA's profile files too), an ARE episode
    file, or a written script (--script: played, stored unrated). A file with a bad line
    imports nothing; nor does one with an episode id already stored, unless --replace.
    An episode keeps the status it was exported with (an ARE file: complete)."""
    read_text(file)  # an unreadable file: one error naming it, before the store starts
    with where.open() as store, cli_errors():
        try:
            imported = import_file(
                store,
                file,
                kind=ImportKind.script if script else kind,
                replace=replace,
                context=read_text(spec_file) if spec_file is not None else None,
            )
        except EpisodeExistsError as error:
            fail(f"{error}; pass --replace to overwrite")
    for warning in imported.warnings:
        typer.echo(printable(warning), err=True)
    if imported.are:
        typer.echo(f"imported episode {imported.ids[0]} from ARE JSON {file}")
    else:
        typer.echo(f"imported {len(imported.ids)} {imported.kind.value} from {file}")
