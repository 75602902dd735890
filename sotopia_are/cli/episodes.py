"""What ``run``, ``batch``, ``demo``, ``show`` and ``evaluate`` share: agents and judges
from options, playing one episode here, and printing an episode record.

Playing and rating are the library's (:func:`sotopia_are.studies.run`,
:func:`~sotopia_are.studies.rate`); everything printed is derived from the
:class:`~sotopia_are.record.EpisodeRecord` they return.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import typer

from sotopia_are.agents import LLMAgent, llm_agents_for
from sotopia_are.evaluation import LLMJudge, Rubric
from sotopia_are.llm import LLMError, LLMSession
from sotopia_are.record import EpisodeRecord, Verdict
from sotopia_are.social import EpisodeSpec, EpisodeStatus, SocialAgent
from sotopia_are.storage import EpisodeStore, StorageError
from sotopia_are.studies import run

from .common import MODEL_ENV, fail, print_scores, printable, usage_line

__all__ = [
    "INTERRUPTED_EXIT",
    "judge_for",
    "llm_agents",
    "play_here",
    "print_record",
    "print_transcript",
    "print_verdict",
    "require_models",
    "respec",
    "unusable",
]

INTERRUPTED_EXIT = 130
"""The exit code after Ctrl-C (128 + SIGINT, as shells report it)."""


def require_models(spec: EpisodeSpec, models: Mapping[str, str]) -> None:
    """:func:`fail`, saying what to pass, unless every participant has a model."""
    missing = [name for name in spec.agent_names if name not in models]
    if missing:
        fail(
            f"no model for {', '.join(missing)}. Pass --model MODEL (or set {MODEL_ENV}) for "
            "every agent, or --agent-model 'NAME=MODEL'; for a local OpenAI-compatible server "
            "(vLLM, Ollama) use --model openai/<name> --api-base http://localhost:8000/v1. "
            "Without a model, 'sotopia-are demo' replays a human-written script."
        )


def llm_agents(spec: EpisodeSpec, models: Mapping[str, str], session: LLMSession) -> list[LLMAgent]:
    """One :class:`LLMAgent` per participant, its calls scoped to the episode (so a
    recorded batch replays episode by episode); see :func:`require_models`."""
    require_models(spec, models)
    return llm_agents_for(spec, models, session)


def respec(spec: EpisodeSpec, episode_id: str, **updates: Any) -> EpisodeSpec:
    """``spec`` under a new ``episode_id`` (and any other field ``updates``), validated
    again (a ``model_copy`` would skip the spec's checks)."""
    return EpisodeSpec.model_validate({**spec.model_dump(), "episode_id": episode_id, **updates})


def judge_for(
    model: str | None, session: LLMSession, rubric: str = "sotopia_eval", samples: int = 1
) -> LLMJudge | None:
    """The judge on ``model`` with the rubric named ``rubric`` (None without a model)."""
    if model is None:
        return None
    return LLMJudge(model, Rubric.load(rubric), samples=samples, session=session)


def unusable(record: EpisodeRecord, judged: bool) -> bool:
    """Whether a command reports ``record`` as a failure (exit 1): it did not complete,
    or (when a judge was asked, ``judged``) no judge could rate it."""
    return record.failed_or_unrated if judged else record.status is not EpisodeStatus.COMPLETE


def _stopped_as(store: EpisodeStore, episode_id: str) -> str:
    """How a stopped episode was left in the store, for the ``interrupted: …`` line."""
    try:
        status = store.get_episode(episode_id).status
    except StorageError:
        return f"{episode_id} could not be marked incomplete (the store cannot be reached)"
    if status is EpisodeStatus.COMPLETE:
        return f"{episode_id} stored as complete but not rated (rate it with 'evaluate')"
    return f"{episode_id} stored as {status.value}"


def play_here(
    store: EpisodeStore,
    spec: EpisodeSpec,
    agents: Sequence[SocialAgent] | Mapping[str, SocialAgent],
    judge: LLMJudge | None = None,
    *,
    tag: str = "",
    models: Mapping[str, str] | None = None,
    scenario_id: str = "",
) -> EpisodeRecord:
    """:func:`~sotopia_are.studies.run` in this process, for one-episode commands: on
    Ctrl-C print ``interrupted: <id> stored as incomplete`` and exit
    :data:`INTERRUPTED_EXIT`; on any other error the same line and exit 1 with the
    error — never a traceback."""
    try:
        return run(
            spec, agents, models=models, judge=judge, store=store, tag=tag, scenario_id=scenario_id
        )
    except KeyboardInterrupt:
        typer.echo(f"interrupted: {_stopped_as(store, spec.episode_id)}", err=True)
        raise typer.Exit(code=INTERRUPTED_EXIT) from None
    except Exception as error:
        typer.echo(f"interrupted: {_stopped_as(store, spec.episode_id)}", err=True)
        known = isinstance(error, StorageError | LLMError)
        fail(str(error) if known else f"{type(error).__name__}: {error}")


def print_transcript(title: str, text: str) -> None:
    """A headed transcript, as plain text (``[private to …]`` is not rich markup)."""
    typer.echo(f"\n== {title} ==")
    typer.echo(text if text.strip() else "(nothing happened)")


def print_verdict(verdict: Verdict) -> None:
    """A judge's scores, its failures and warnings."""
    evaluation = verdict.evaluation
    title = printable(f"Scores ({verdict.rubric}, judge {verdict.judge_model})")
    print_scores(verdict.scores(), title)
    for failure in evaluation.failures:
        text = printable(f"{failure.error_type}: {failure.error}")
        typer.echo(f"judge sample {failure.sample} failed: {text}")
    if evaluation.failed:
        typer.echo("every judge sample failed: the episode is not rated")
    for warning in evaluation.warnings:
        typer.echo(f"judge warning: {printable(warning)}")


def print_record(record: EpisodeRecord, *, verdict: Verdict | None = None) -> None:
    """The omniscient transcript, how it ended, the verdict (default: the latest) and
    usage."""
    print_transcript(
        f"{record.episode_id}: the full transcript (private actions marked)", record.transcript()
    )
    typer.echo(f"\nended: {record.status.value}, {record.reason}")
    shown = verdict or record.verdict
    if shown is not None:
        print_verdict(shown)
    elif record.status is EpisodeStatus.FAILED:
        typer.echo(f"The episode failed and was not rated: {record.reason}")
    typer.echo(usage_line(record.usage))
