"""`sotopia-are show EPISODE_ID [--as AGENT]`: a stored episode, in full or as one agent
saw it."""

from __future__ import annotations

from typing import Annotated

import typer

from sotopia_are.record import EpisodeRecord
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import EpisodeLog

from .common import DataDirOption, RedisUrlOption, cli_errors, fail, open_store, printable
from .episodes import print_transcript, print_verdict

__all__ = ["show"]


def _print_header(episode: EpisodeLog, record: EpisodeRecord) -> None:
    # Stored names may predate the checks that refuse control characters: escape them.
    typer.echo(
        f"episode {printable(record.episode_id)}  [{record.status.value}]  "
        f"tag: {printable(record.tag) or '-'}"
    )
    for name in record.spec.agent_names:
        typer.echo(f"  {printable(name)}: {printable(record.models.get(name) or 'scripted')}")
    for verdict in record.verdicts:
        prompt = verdict.prompt or "prompt unknown"
        typer.echo(
            f"  judge: {printable(verdict.judge_model)} "
            f"({printable(verdict.rubric)}, {printable(prompt)})"
        )
    if record.reason:
        label = "ended" if record.status is EpisodeStatus.COMPLETE else "error"
        typer.echo(f"{label}: {printable(record.reason, keep_newlines=True)}")
    if episode.attempt > 1:
        typer.echo(f"attempt {episode.attempt}")


def _print_repairs(record: EpisodeRecord) -> None:
    usage = record.usage
    if usage.normalized_calls or usage.repaired_calls:
        typer.echo(
            f"model answers accepted after normalising their form: {usage.normalized_calls}, "
            f"after asking again: {usage.repaired_calls}"
        )


def show(
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
    data_dir: DataDirOption = None,
    redis_url: RedisUrlOption = None,
) -> None:
    """Show a stored episode: the full transcript (omniscient, private actions marked
    ``[private to [...]]``) with scores, or with --as the view of one agent."""
    with open_store(data_dir, redis_url) as store, cli_errors():
        stored = store.get_episode(episode_id)
        record = store.load(episode_id)
        # Checked before anything is printed: an error follows no half of the output.
        if as_agent is not None and as_agent not in record.spec.agent_names:
            fail(
                f"unknown agent {as_agent!r} in episode {episode_id} "
                f"(agents: {', '.join(record.spec.agent_names)})"
            )
        _print_header(stored, record)
        if as_agent is None:
            background = record.spec.background().to_natural_language()
            typer.echo(f"\n{printable(background, keep_newlines=True)}\n")
            print_transcript(
                "the full transcript (private actions marked)",
                printable(record.transcript(), keep_newlines=True),
            )
            for verdict in record.verdicts:
                print_verdict(verdict)
            _print_repairs(record)
            return
        view = record.views.agents[as_agent]
        background = view.background.to_natural_language()
        typer.echo(f"\n{printable(background, keep_newlines=True)}\n")
        print_transcript(
            f"as {printable(as_agent)} saw it", printable(view.transcript(), keep_newlines=True)
        )
