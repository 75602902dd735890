"""What the episode commands share: playing one episode here, and printing a record.

Playing and rating are the library's (:func:`sotopia_are.studies.run`,
:func:`~sotopia_are.studies.rate`); everything printed is derived from the
:class:`~sotopia_are.record.EpisodeRecord` they return.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import typer

import sotopia_are as sa
from sotopia_are import studies

from .common import INTERRUPTED_EXIT, fail, print_scores, printable

__all__ = [
    "play_here",
    "print_outcome",
    "print_record",
    "print_transcript",
    "print_verdict",
    "unusable",
]


def unusable(record: sa.EpisodeRecord, judge: str | None) -> bool:
    """Whether a command reports ``record`` as a failure (exit 1): it did not complete,
    or (when a judge was asked: ``judge``, its model) that judge could not rate it (a
    game's outcome verdict does not stand in for it)."""
    if record.status is not sa.EpisodeStatus.COMPLETE:
        return True
    return judge is not None and record.verdict_of(judge) is None


def _stopped_as(store: sa.EpisodeStore, episode_id: str) -> str:
    """How a stopped episode was left in the store, for the ``interrupted: …`` line."""
    try:
        status = store.load(episode_id).status
    except sa.RecordNotFoundError:
        return f"{episode_id} was not stored"
    except (sa.StorageError, ValueError):
        return f"{episode_id} could not be marked incomplete (the store cannot be read)"
    if status is sa.EpisodeStatus.COMPLETE:
        return f"{episode_id} stored as complete but not rated (rate it with 'evaluate')"
    return f"{episode_id} stored as {status.value}"


def _live(header: str) -> Callable[[studies.ConversationEntry], None]:
    """Print each entry as it happens, ``header`` (if any) before the first: an episode
    the preflight stops never started, and gets no heading."""
    unsaid = [header] if header else []

    def show(entry: studies.ConversationEntry) -> None:
        while unsaid:
            typer.echo(unsaid.pop())
        if not entry.is_nothing:
            typer.echo(f"turn {entry.turn}: {printable(entry.render())}")

    return show


def play_here(
    store: sa.EpisodeStore,
    spec: sa.EpisodeSpec,
    agents: Sequence[studies.SocialAgent] | Mapping[str, studies.SocialAgent] | None = None,
    *,
    script: str | None = None,
    live: bool = False,
    header: str = "",
    **options: Any,
) -> sa.EpisodeRecord:
    """:func:`~sotopia_are.studies.run` in this process (``options`` are its keywords),
    or with ``script`` :func:`~sotopia_are.studies.replay_script` of it, each turn
    printed as it happens if ``live`` (``header`` before the first): on Ctrl-C print
    ``interrupted: <id> stored as incomplete`` and exit :data:`INTERRUPTED_EXIT`; on any
    other error the same line and exit 1 with the error, never a traceback. A
    :class:`~sotopia_are.ConfigurationError` (the preflight's) or a
    :class:`~sotopia_are.StudyInputError` (a study naming no model: both before anything
    is stored) is raised as it is, for :func:`~sotopia_are.cli.common.cli_errors`."""
    on_entry = _live(header) if live else None
    try:
        if script is not None:
            return studies.replay_script(script, spec, store=store, on_entry=on_entry, **options)
        return studies.run(spec, agents, store=store, on_entry=on_entry, **options)
    except (sa.ConfigurationError, sa.StudyInputError):
        raise
    except KeyboardInterrupt:
        typer.echo(f"interrupted: {_stopped_as(store, spec.episode_id)}", err=True)
        raise typer.Exit(code=INTERRUPTED_EXIT) from None
    except Exception as error:
        typer.echo(f"interrupted: {_stopped_as(store, spec.episode_id)}", err=True)
        known = isinstance(error, sa.StorageError | sa.LLMError)
        fail(str(error) if known else f"{type(error).__name__}: {error}")


def print_transcript(title: str, text: str) -> None:
    """A headed transcript, as plain text (``[private to …]`` is not rich markup)."""
    typer.echo(f"\n== {title} ==")
    typer.echo(printable(text, keep_newlines=True) if text.strip() else "(nothing happened)")


def print_verdict(verdict: sa.Verdict, *, reasoning: bool = False) -> None:
    """A judge's scores (agents in the episode's order), its failures and warnings, and
    with ``reasoning`` its reasoning for each agent."""
    evaluation = verdict.evaluation
    scores = verdict.scores
    print_scores(scores, printable(f"Scores from {scores.source}"))
    for failure in evaluation.failures:
        text = printable(f"{failure.error_type}: {failure.error}")
        typer.echo(f"judge sample {failure.sample} failed: {text}")
    if evaluation.failed:
        typer.echo("every judge sample failed: the episode is not rated")
    for warning in evaluation.warnings:
        typer.echo(f"judge warning: {printable(warning)}")
    if reasoning:
        for rating in evaluation.ratings:
            typer.echo(printable(rating.comment(), keep_newlines=True))


def print_outcome(record: sa.EpisodeRecord) -> None:
    """A complete game's outcome, recomputed from its events: the winners, then each
    player's role, team, whether it won and its payoff. Nothing for a conversation."""
    outcome = studies.game_outcome(record)
    if outcome is None:
        return
    winners = ", ".join(outcome.winners) or "nobody"
    deal = f", deal at {outcome.deal}" if outcome.deal is not None else ""
    how = f"{outcome.ended_by}{deal}, {outcome.cycles} cycles"
    typer.echo(printable(f"outcome: winners: {winners} ({how})"))
    for row in outcome.players:
        typer.echo(
            printable(
                f"  {row.name}: {row.role} ({row.team}), {'won' if row.won else 'lost'}, "
                f"payoff {row.payoff}{'' if row.alive else ', eliminated'}"
            )
        )


def print_record(record: sa.EpisodeRecord, *, transcript: bool = True) -> None:
    """The omniscient transcript (unless it was shown live), how it ended (a game's
    outcome too), the latest verdict and the usage."""
    if transcript:
        print_transcript(
            f"{record.episode_id}: the full transcript (private actions marked)",
            record.transcript(),
        )
    typer.echo(f"\nended: {record.status.value}, {printable(record.reason)}")
    print_outcome(record)
    if record.verdict is not None:
        print_verdict(record.verdict)
    elif record.status is sa.EpisodeStatus.FAILED:
        typer.echo(f"The episode failed and was not rated: {printable(record.reason)}")
    typer.echo(record.usage.describe())
