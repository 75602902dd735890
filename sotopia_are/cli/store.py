"""`sotopia-are list | export | import`: the stored episodes and profiles, in and out.

Episodes and profiles go out and in as JSONL (one record a line; SOTOPIA's profile files
are read too); an episode also exports as ARE scenario JSON, and an ARE file written by
``export`` (or ``demo``) imports back as an episode.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

import sotopia_are as sa
from sotopia_are import studies
from sotopia_are.studies import flags

from .common import cli_errors, fail, printable, read_text
from .options import StoreOptions, with_store

__all__ = ["export", "import_", "list_"]


def _row(summary: studies.EpisodeSummary, *, source: bool) -> list[str]:
    """A listing's columns; ``source`` adds the judge and rubric to the scores (when the
    listing's episodes were not all rated by one)."""
    when = summary.created_at
    overall = ", ".join(
        f"{printable(agent.split()[0])} {score:.1f}" for agent, score in summary.overall.items()
    )
    by = f" (judge {printable(summary.judge)}, {printable(summary.rubric)})" if source else ""
    others = len(summary.judges) - 1
    more = f" [+{others} other verdict{'s' * (others > 1)}]" if overall and others > 0 else ""
    return [
        printable(summary.episode_id),
        summary.status.value,
        printable(summary.tag) or "-",
        printable(summary.scenario_id) or "-",
        f"{summary.event_count} events",
        printable(", ".join(sorted({m for m in summary.models if m}))) or "scripted",
        datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M") if when else "",
        f"overall{by}: {overall}{more}" if overall else "",
        f"FLAGGED ({len(summary.problems)} problems)" if summary.problems else "",
    ]


def _sources(summaries: list[studies.EpisodeSummary], judge: str | None) -> list[str]:
    """The lines that say where the listed scores came from and how to choose others."""
    rated = [s for s in summaries if s.overall]
    sources = sorted({(s.judge, s.rubric) for s in rated})
    lines = []
    if len(sources) == 1:
        model, rubric = sources[0]
        lines.append(f"scores from judge {printable(model)}, rubric {printable(rubric)}")
    elif sources:
        lines.append(f"scores from {len(sources)} judge/rubric pairs (named on each line)")
    several = sum(1 for s in summaries if len(s.judges) > 1)
    if judge is not None:
        unrated = sum(1 for s in summaries if not s.overall and s.judges)
        if unrated:
            lines.append(f"{unrated} episodes have no rated verdict of judge {printable(judge)}")
    elif several:
        lines.append(
            f"{several} episodes have several verdicts: each shows its latest rated one; "
            "choose with --judge MODEL"
        )
    flagged = sum(1 for s in summaries if s.problems)
    if flagged:
        lines.append(f"{flagged} episodes are FLAGGED: imported despite problems (see 'show')")
    return lines


def _warn(skipped: list[studies.UnreadableRecordError]) -> None:
    """One ``warning: skipped KEY: reason`` line on stderr for each key skipped so far."""
    while skipped:
        error = skipped.pop(0)
        typer.echo(f"warning: skipped {printable(error.key)}: {printable(error.reason)}", err=True)


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
        flags.StatusChoice | None, typer.Option("--status", help="Only episodes with this status.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most this many.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON summary a line.")] = False,
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge",
            help="Show the scores of this judge (a model or a verdict key); default: each "
            "episode's latest rated verdict.",
            show_default=False,
        ),
    ] = None,
    allow_empty: Annotated[
        bool,
        typer.Option("--allow-empty", help="No episode matching is not an error (exit 0)."),
    ] = False,
) -> None:
    """List stored episodes, oldest first, filtered by tag, scenario, model, agent, status.

    Scores are each episode's latest rated verdict (or --judge's), named by judge and
    rubric. Nothing matching is an error (exit 1) unless --allow-empty. A stored key
    that is not a readable episode gets one ``warning: skipped KEY: reason`` line on
    stderr; the others are still listed."""
    with where.open() as store, cli_errors():
        skipped: list[studies.UnreadableRecordError] = []
        filters = {"tag": tag, "scenario": scenario, "model": model, "agent": agent}
        listed = store.iter_summaries(
            **filters,
            status=sa.EpisodeStatus(status) if status is not None else None,
            limit=limit,
            on_unreadable=skipped.append,
            judge=judge,
        )
        first = next(listed, None)
        if as_json:
            # One line each as it is read: --json holds no listing in memory.
            for summary in itertools.chain([first] if first else [], listed):
                _warn(skipped)
                typer.echo(summary.model_dump_json())
        summaries = [] if as_json or first is None else [first, *listed]
        _warn(skipped)
        if first is None:
            chosen = {**filters, "status": status.value if status is not None else None}
            described = ", ".join(f"{k} {v!r}" for k, v in chosen.items() if v is not None)
            message = (
                f"no episodes match {described}"
                if described
                else f"no episodes in {store.location}"
            )
            if not allow_empty:
                fail(f"{printable(message)} (pass --allow-empty if that is expected)")
            typer.echo(printable(message), err=as_json)
            return
        if as_json:
            return
        sources = _sources(summaries, judge)
        one_source = len({(s.judge, s.rubric) for s in summaries if s.overall}) <= 1
        # Plain aligned columns, not a table: ids stay whole and lines grep well.
        rows = [_row(summary, source=not one_source) for summary in summaries]
        widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
        typer.echo(f"{len(summaries)} episodes in {store.location}")
        for row in rows:
            typer.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        for line in sources:
            typer.echo(line)


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
        flags.ExportFormat,
        typer.Option("--format", "-f", help="jsonl: records with events and calls; are: ARE JSON."),
    ] = flags.ExportFormat.jsonl,
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
    allow_empty: Annotated[
        bool,
        typer.Option(
            "--allow-empty",
            help="No episode to export is not an error: write an empty file (exit 0).",
        ),
    ] = False,
) -> None:
    """Export stored episodes as JSONL (re-importable with 'import') or ARE scenario JSON.

    Episodes are read and written one after another, so memory stays small however many
    are exported. Files are written whole or not at all: each goes to a temporary file
    renamed over the target once every episode is in; to stdout an error stops the lines
    part way (exit 1). No episode to export (an empty store, a tag no episode has) is an
    error (exit 1) unless --allow-empty."""
    if sum((episode_id is not None, tag is not None, all_)) != 1:
        fail("give an EPISODE_ID, --tag TAG or --all (one of the three)")
    with where.open() as store, cli_errors():
        ids = (
            [store.load(episode_id).episode_id]
            if episode_id
            else studies.selected_episodes(store, tag=tag, allow_empty=allow_empty)
        )
        if format_ is flags.ExportFormat.jsonl or episode_id is not None:
            studies.export_to(store, ids, format_, output)
            _done(f"exported {len(ids)} episodes as {format_.value}", output)
        elif output is None:
            fail("many episodes as ARE JSON are one file each: give a directory with -o")
        else:
            studies.export_are_files(store, ids, output)
            _done(f"exported {len(ids)} episodes as ARE JSON", output)


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
        flags.ImportKind,
        typer.Option("--kind", help="What the file holds (a script is never guessed)."),
    ] = flags.ImportKind.auto,
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
    lenient: Annotated[
        bool,
        typer.Option(
            "--lenient",
            help="Keep episodes that fail the checks (scores out of range, actions by "
            "non-participants, status and events that disagree), FLAGGED with their problems.",
        ),
    ] = False,
) -> None:
    """Import episodes or profiles (JSONL; SOTOPIA's profile files too), an ARE episode
    file, or a written script (--script: played, stored unrated). A file with a bad line
    imports nothing; nor does one with an episode id already stored, unless --replace.
    An episode keeps the status it was exported with (an ARE file: complete). Episodes
    are checked as played ones are: one no run could have produced is refused, naming
    the field (--lenient keeps it, flagged in 'list' and 'show')."""
    read_text(file)  # an unreadable file: one error naming it, before the store starts
    with where.open() as store, cli_errors():
        try:
            imported = studies.import_file(
                store,
                file,
                kind=flags.ImportKind.script if script else kind,
                replace=replace,
                context=read_text(spec_file) if spec_file is not None else None,
                lenient=lenient,
            )
        except studies.EpisodeExistsError as error:
            fail(f"{error}; pass --replace to overwrite")
    for warning in imported.warnings:
        typer.echo(printable(warning), err=True)
    for episode_id, problems in imported.flagged:
        typer.echo(
            f"warning: episode {printable(episode_id)} kept FLAGGED: "
            + printable("; ".join(problems)),
            err=True,
        )
    if imported.are:
        typer.echo(f"imported episode {imported.ids[0]} from ARE JSON {file}")
    else:
        typer.echo(f"imported {len(imported.ids)} {imported.kind.value} from {file}")
