"""`sotopia-are show EPISODE_ID [--as AGENT]`: a stored episode, in full or as one agent
saw it."""

from __future__ import annotations

from typing import Annotated

import typer

import sotopia_are as sa

from .common import cli_errors, fail, printable
from .episodes import print_transcript, print_verdict
from .options import StoreOptions, with_store

__all__ = ["show"]


def _print_header(record: sa.EpisodeRecord) -> None:
    # Stored names may predate the checks that refuse control characters: escape them.
    typer.echo(
        f"episode {printable(record.episode_id)}  [{record.status.value}]  "
        f"tag: {printable(record.tag) or '-'}"
    )
    for name in record.spec.agent_names:
        typer.echo(f"  {printable(name)}: {printable(record.models.get(name) or 'scripted')}")
    default = record.verdict_of()
    for verdict in record.verdicts:
        status = "" if verdict.rated else " [not rated: every sample failed]"
        if verdict is default and len(record.verdicts) > 1:
            status = " [the default scores: latest rated; others with 'list --judge']"
        typer.echo(
            f"  judge: {printable(verdict.judge_model)} "
            f"(rubric {printable(verdict.rubric)}, "
            f"{printable(verdict.prompt or 'prompt unknown')}){status}"
        )
    for problem in record.problems:
        typer.echo(f"  FLAGGED (imported despite): {printable(problem)}")
    if record.reason:
        label = "ended" if record.status is sa.EpisodeStatus.COMPLETE else "error"
        typer.echo(f"{label}: {printable(record.reason, keep_newlines=True)}")
    typer.echo(record.usage.describe())


@with_store
def show(
    where: StoreOptions,
    episode_id: Annotated[str, typer.Argument(help="The episode's id (see 'sotopia-are list').")],
    as_agent: Annotated[
        str | None,
        typer.Option(
            "--as",
            help="Show only what this agent could perceive (its own goal; private actions "
            "only if it sent or received them).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Show a stored episode: the full transcript (omniscient, private actions marked
    ``[private to [...]]``) with every verdict (judge, rubric, scores, reasoning), or with
    --as the view of one agent."""
    with where.open() as store, cli_errors():
        record = store.load(episode_id)
    # Checked before anything is printed: an error follows no half of the output.
    if as_agent is not None and as_agent not in record.spec.agent_names:
        fail(
            f"unknown agent {as_agent!r} in episode {episode_id} "
            f"(agents: {', '.join(record.spec.agent_names)})"
        )
    _print_header(record)
    if as_agent is None:
        background = record.spec.background().to_natural_language()
        typer.echo(f"\n{printable(background, keep_newlines=True)}")
        print_transcript("the full transcript (private actions marked)", record.transcript())
        for verdict in record.verdicts:
            typer.echo("")
            print_verdict(verdict, reasoning=True)
        return
    view = record.views.agents[as_agent]
    typer.echo(f"\n{printable(view.background.to_natural_language(), keep_newlines=True)}")
    print_transcript(f"as {printable(as_agent)} saw it", view.transcript())
