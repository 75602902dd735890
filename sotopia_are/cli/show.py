"""`sotopia-are show EPISODE_ID [--as AGENT]`: a stored episode, in full or as one agent
saw it."""

from __future__ import annotations

from typing import Annotated

import typer

from sotopia_are.storage import EpisodeLog, load_episode

from .common import DataDirOption, RedisUrlOption, cli_errors, fail, open_store, print_scores
from .episodes import print_transcript, views_of

__all__ = ["show"]


def _print_header(episode: EpisodeLog) -> None:
    typer.echo(f"episode {episode.pk}  [{episode.status.value}]  tag: {episode.tag or '-'}")
    for name, model in zip(episode.agents, episode.models, strict=False):
        typer.echo(f"  {name}: {model or 'scripted'}")
    if episode.evaluator_model:
        typer.echo(f"  judge: {episode.evaluator_model}")
    if episode.termination_reason:
        typer.echo(f"ended: {episode.termination_reason}")
    if episode.error:
        typer.echo(f"error: {episode.error}")


def _print_repairs(episode: EpisodeLog) -> None:
    normalized = episode.usage.get("normalized_calls") or 0
    repaired = episode.usage.get("repaired_calls") or 0
    if normalized or repaired:
        typer.echo(
            f"model answers accepted after normalising their form: {normalized}, "
            f"after asking again: {repaired}"
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
        record = store.get_episode(episode_id)
        episode = load_episode(store, episode_id)
        views = views_of(episode)
        # Checked before anything is printed: an error follows no half of the output.
        if as_agent is not None and as_agent not in views.agents:
            fail(
                f"unknown agent {as_agent!r} in episode {episode_id} "
                f"(agents: {', '.join(episode.spec.agent_names)})"
            )
        _print_header(record)
        if as_agent is None:
            typer.echo(f"\n{episode.spec.background().to_natural_language()}\n")
            print_transcript("the full transcript (private actions marked)", views.transcript())
            print_scores(record.scores)
            for warning in record.judge_warnings:
                typer.echo(f"judge warning: {warning}")
            _print_repairs(record)
            return
        view = views.agents[as_agent]
        typer.echo(f"\n{view.background.to_natural_language()}\n")
        print_transcript(f"as {as_agent} saw it", view.transcript())
