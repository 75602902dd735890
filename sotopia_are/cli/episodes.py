"""Playing, storing and showing episodes: the steps ``run``, ``batch``, ``demo``, ``show``
and ``evaluate`` share.

Everything here delegates: the runner and the judge play and rate, the
:class:`~sotopia_are.storage.EpisodeRecorder` streams events to the store, and transcripts
and agents' views come from the social layer's :class:`~sotopia_are.social.EpisodeViews`
(derived from the log through the one visibility function).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import typer

from sotopia_are.agents import LLMAgent, llm_agents_for
from sotopia_are.evaluation import EvaluatedEpisode, Evaluation, LLMJudge, run_evaluated_episode
from sotopia_are.llm import LLMSession
from sotopia_are.simulation.notification_system import BaseNotificationSystem
from sotopia_are.social import (
    ConversationApp,
    EpisodeResult,
    EpisodeSpec,
    EpisodeViews,
    ImportedEpisode,
    SocialAgent,
    run_episode,
)
from sotopia_are.storage import EpisodeRecorder

from .common import MODEL_ENV, fail, print_scores, usage_line

__all__ = [
    "llm_agents",
    "play",
    "print_episode",
    "print_evaluation",
    "print_transcript",
    "require_models",
    "scores_of",
    "views_of",
]


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


async def play(
    spec: EpisodeSpec,
    agents: Sequence[SocialAgent] | Mapping[str, SocialAgent],
    recorder: EpisodeRecorder,
    judge: LLMJudge | None = None,
    *,
    scenario_id: str = "",
) -> tuple[EpisodeResult, EvaluatedEpisode | None]:
    """Store ``spec``'s episode as running, play it with its events streamed to the store,
    then (with a ``judge``) rate it and store the verdict."""
    recorder.start(spec, scenario_id=scenario_id)
    if judge is None:
        return await run_episode(spec, agents, sinks=[recorder]), None
    evaluated = await run_evaluated_episode(spec, agents, judge, sinks=[recorder])
    recorder.save_evaluation(evaluated)
    return evaluated.episode, evaluated


def views_of(episode: ImportedEpisode) -> EpisodeViews:
    """Every participant's view of a stored (imported) episode, rebuilt from its log."""
    # The runner's app keeps its class name, as ``social.logged_actions`` assumes too.
    app = ConversationApp(episode.spec.agent_names)
    views = EpisodeViews(episode.spec, app.name, BaseNotificationSystem(app.notification_config()))
    views.add_all(episode.events)
    return views


def scores_of(evaluation: Evaluation) -> dict[str, dict[str, float]]:
    """Each agent's dimension scores plus ``overall_score`` (as the store keeps them)."""
    return {
        rating.agent: {**rating.scores(), "overall_score": rating.overall}
        for rating in evaluation.ratings
    }


def print_transcript(title: str, text: str) -> None:
    """A headed transcript, as plain text (``[private to …]`` is not rich markup)."""
    typer.echo(f"\n== {title} ==")
    typer.echo(text if text.strip() else "(nothing happened)")


def print_evaluation(evaluated: EvaluatedEpisode) -> None:
    """The judge's scores, its failures if any, and the termination check."""
    evaluation = evaluated.evaluation
    if evaluation is None:
        typer.echo(evaluated.response.comments)
        return
    print_scores(scores_of(evaluation), f"Scores ({evaluation.rubric}, judge {evaluation.model})")
    for failure in evaluation.failures:
        typer.echo(f"judge sample {failure.sample} failed: {failure.error_type}: {failure.error}")
    if evaluation.failed:
        typer.echo("every judge sample failed: the episode is not rated")


def print_episode(result: EpisodeResult, evaluated: EvaluatedEpisode | None) -> None:
    """The omniscient transcript, how it ended, scores and usage."""
    print_transcript(
        f"{result.episode_id}: the full transcript (private actions marked)", result.transcript()
    )
    typer.echo(f"\nended: {result.status}, {result.reason}")
    if evaluated is not None:
        print_evaluation(evaluated)
    typer.echo(usage_line(evaluated.usage if evaluated is not None else result.usage))
