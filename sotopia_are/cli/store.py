"""`sotopia-are list | export | import`: the stored episodes and profiles, in and out.

Episodes and profiles go out and in as JSONL (storage's format, which also reads
SOTOPIA's profile files); an episode also exports as ARE scenario JSON, and an ARE file
written by ``export`` (or ``demo``) imports back as an episode.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from sotopia_are.simulation.files import write_text_atomically
from sotopia_are.storage import (
    EpisodeExistsError,
    EpisodeLog,
    EpisodeStatus,
    EpisodeStore,
    export_episode_json,
    export_episodes,
)
from sotopia_are.storage.errors import UnreadableRecordError
from sotopia_are.studies import ImportKind, export_are_files, import_file

from .common import (
    DataDirOption,
    RedisUrlOption,
    cli_errors,
    fail,
    open_store,
    printable,
    read_text,
)

__all__ = ["export", "import_", "list_"]


class ExportFormat(StrEnum):
    """What ``export`` writes."""

    jsonl = "jsonl"
    are = "are"


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M") if timestamp else ""


def _overall(episode: EpisodeLog) -> str:
    overall = ", ".join(
        f"{printable(agent.split()[0])} {scores['overall_score']:.1f}"
        for agent, scores in episode.scores.items()
        if "overall_score" in scores
    )
    return f"overall: {overall}" if overall else ""


def list_(
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
    as_json: Annotated[bool, typer.Option("--json", help="One JSON record a line.")] = False,
    data_dir: DataDirOption = None,
    redis_url: RedisUrlOption = None,
) -> None:
    """List stored episodes, oldest first, filtered by tag, scenario, model, agent, status.

    A stored key that is not a readable episode gets one ``warning: skipped KEY: reason``
    line on stderr; the others are still listed."""
    with open_store(data_dir, redis_url) as store, cli_errors():
        skipped: list[UnreadableRecordError] = []
        episodes = store.list_episodes(
            tag=tag,
            scenario=scenario,
            model=model,
            agent=agent,
            status=status,
            limit=limit,
            on_unreadable=skipped.append,
        )
        for error in skipped:
            typer.echo(
                f"warning: skipped {printable(error.key)}: {printable(error.reason)}", err=True
            )
        if as_json:
            for episode in episodes:
                document = episode.to_document()
                document.pop("spec", None)
                typer.echo(json.dumps(document, ensure_ascii=False, sort_keys=True))
            return
        if not episodes:
            typer.echo(
                "no episodes match"
                if any((tag, scenario, model, agent, status))
                else f"no episodes in {store.location}"
            )
            return
        # Plain aligned columns, not a table: ids stay whole and lines grep well.
        rows = [
            [
                printable(episode.pk),
                episode.status.value,
                printable(episode.tag) or "-",
                printable(episode.scenario_id) or "-",
                f"{episode.event_count} events",
                printable(", ".join(sorted({m for m in episode.models if m}))) or "scripted",
                _when(episode.created_at),
                _overall(episode),
            ]
            for episode in episodes
        ]
        widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
        typer.echo(f"{len(episodes)} episodes in {store.location}")
        for row in rows:
            typer.echo(
                "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            )


def export(
    episode_id: Annotated[
        str | None, typer.Argument(help="The episode to export (or --all).", show_default=False)
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Export every stored episode.")] = False,
    format_: Annotated[
        ExportFormat,
        typer.Option(
            "--format", "-f", help="jsonl: episodes with events and calls; are: ARE JSON."
        ),
    ] = ExportFormat.jsonl,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="The file to write (default: stdout); with --all --format are, a directory "
            "(one <id>.json per episode).",
            show_default=False,
        ),
    ] = None,
    data_dir: DataDirOption = None,
    redis_url: RedisUrlOption = None,
) -> None:
    """Export stored episodes as JSONL (re-importable with 'import') or ARE scenario JSON.

    Files are written whole or not at all: everything is read from the store first, then
    each file goes to a temporary file renamed over the target."""
    if (episode_id is None) == (not all_):
        fail("give an EPISODE_ID or --all (one of the two)")
    with open_store(data_dir, redis_url) as store, cli_errors():
        ids = _all_ids(store) if all_ else [store.get_episode(str(episode_id)).pk]
        if format_ is ExportFormat.jsonl:
            buffer = io.StringIO()
            count = export_episodes(store, buffer, ids)
            _write(output, buffer.getvalue())
            _done(f"exported {count} episodes", output)
            return
        if not all_:
            _write(output, export_episode_json(store, ids[0], indent=2))
            _done(f"exported {ids[0]} as ARE JSON", output)
            return
        if output is None:
            fail("--all --format are writes one file per episode: give a directory with -o")
        export_are_files(store, ids, output)
        _done(f"exported {len(ids)} episodes as ARE JSON", output)


def _all_ids(store: EpisodeStore) -> list[str]:
    """Every stored episode's id; :func:`fail` naming every unreadable key instead, so that
    ``export --all`` never writes a set with some episodes silently missing."""
    skipped: list[UnreadableRecordError] = []
    ids = store.episode_ids(on_unreadable=skipped.append)
    if skipped:
        fail(
            f"{len(skipped)} stored keys are not readable episodes, nothing was exported: "
            + "; ".join(f"{printable(e.key)} ({printable(e.reason)})" for e in skipped)
            + ". Fix: move them out of the way or delete them, or export episodes by id"
        )
    return ids


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


@contextmanager
def _refuse_existing() -> Iterator[None]:
    """An episode id already stored: one error naming it and the way to overwrite it."""
    try:
        yield
    except EpisodeExistsError as error:
        fail(f"{error}; pass --replace to overwrite")


def import_(
    file: Annotated[
        Path,
        typer.Argument(help="A JSONL file of episodes or profiles, or an episode's ARE JSON file."),
    ],
    kind: Annotated[
        ImportKind, typer.Option("--kind", help="What the JSONL file holds.")
    ] = ImportKind.auto,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", help="Overwrite stored episodes with the same ids (and their data)."
        ),
    ] = False,
    data_dir: DataDirOption = None,
    redis_url: RedisUrlOption = None,
) -> None:
    """Import episodes or profiles (JSONL; SOTOPIA's profile files too) or an ARE episode
    file into the store. A file with a bad line imports nothing; nor does one with an
    episode id already stored, unless --replace. An episode keeps the status it was
    exported with (an ARE file that does not say is imported as complete)."""
    read_text(file)  # an unreadable file: one error naming it, before the store starts
    with open_store(data_dir, redis_url) as store, cli_errors(), _refuse_existing():
        imported = import_file(store, file, kind=kind, replace=replace)
    if imported.are:
        typer.echo(f"imported episode {imported.ids[0]} from ARE JSON {file}")
    else:
        typer.echo(f"imported {len(imported.ids)} {imported.kind.value} from {file}")
