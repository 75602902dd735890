"""Playing, storing and showing episodes: the steps ``run``, ``batch``, ``demo``, ``show``
and ``evaluate`` share.

Everything here delegates: the runner and the judge play and rate, the
:class:`~sotopia_are.storage.EpisodeRecorder` streams events to the store, and transcripts
and agents' views come from the social layer's :class:`~sotopia_are.social.EpisodeViews`
(derived from the log through the one visibility function).

An episode that dies while it is played (Ctrl-C, a judge or store error) is marked
``incomplete`` with the reason when the store can still be reached, so nothing stays
``running`` forever; ``--resume`` reruns it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import typer

from sotopia_are.agents import LLMAgent, ScriptedAgent, llm_agents_for
from sotopia_are.evaluation import (
    EvaluatedEpisode,
    Evaluation,
    LLMJudge,
    Rubric,
    evaluate_episode,
    run_evaluated_episode,
)
from sotopia_are.llm import LLMCall, LLMError, LLMSession
from sotopia_are.simulation.notification_system import BaseNotificationSystem
from sotopia_are.social import (
    ConversationApp,
    EpisodeResult,
    EpisodeSpec,
    EpisodeUsage,
    EpisodeViews,
    ImportedEpisode,
    SocialAgent,
    logged_actions,
    run_episode,
)
from sotopia_are.storage import (
    EpisodeRecorder,
    EpisodeStatus,
    EpisodeStore,
    StorageError,
    load_episode,
)

from .common import MODEL_ENV, fail, print_scores, run_async, usage_line

__all__ = [
    "INTERRUPTED_EXIT",
    "judge_for",
    "judge_stored",
    "judge_warnings_of",
    "llm_agents",
    "play",
    "play_here",
    "print_episode",
    "print_evaluation",
    "print_transcript",
    "require_models",
    "respec",
    "scores_of",
    "unrated",
    "views_of",
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


def judge_warnings_of(evaluated: EvaluatedEpisode | None) -> list[str]:
    """What is suspicious in the judge's verdict (nothing without one)."""
    if evaluated is None or evaluated.evaluation is None:
        return []
    return list(evaluated.evaluation.warnings)


def unrated(evaluated: EvaluatedEpisode | None) -> bool:
    """Whether a judge was asked but could not rate (every sample failed, or no verdict)."""
    if evaluated is None:
        return False
    return evaluated.evaluation is None or evaluated.evaluation.failed


async def play(
    store: EpisodeStore,
    spec: EpisodeSpec,
    agents: Sequence[SocialAgent] | Mapping[str, SocialAgent],
    judge: LLMJudge | None = None,
    *,
    tag: str = "",
    models: Mapping[str, str] | None = None,
    scenario_id: str = "",
) -> tuple[EpisodeResult, EvaluatedEpisode | None]:
    """Store ``spec``'s episode as running (under ``tag``, with the agents' ``models``),
    play it with its events streamed to the store, then (with a ``judge``) rate it and
    store the verdict.

    If anything stops it before it ends (cancellation, Ctrl-C, a judge or store error), a
    still-running episode is marked ``incomplete`` with the reason, and the error is
    raised again.
    """
    recorder = EpisodeRecorder(
        store, tag=tag, models=models, evaluator_model=judge.model if judge else ""
    )
    recorder.start(spec, scenario_id=scenario_id)
    try:
        if judge is None:
            return await run_episode(spec, agents, sinks=[recorder]), None
        evaluated = await run_evaluated_episode(spec, agents, judge, sinks=[recorder])
        recorder.save_evaluation(evaluated)
        return evaluated.episode, evaluated
    except BaseException as error:
        _mark_stopped(store, spec.episode_id, error)
        raise


def _mark_stopped(store: EpisodeStore, episode_id: str, error: BaseException) -> None:
    if isinstance(error, KeyboardInterrupt | asyncio.CancelledError):
        reason = "interrupted: its run was stopped (Ctrl-C or cancelled)"
    else:
        reason = f"interrupted by {type(error).__name__}: {error}"
    # The store may be unreachable (the error being raised says so) or the episode no
    # longer running (it finished; only its rating failed): then nothing more to record.
    with contextlib.suppress(StorageError):
        store.mark_incomplete(episode_id, reason)


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
) -> tuple[EpisodeResult, EvaluatedEpisode | None]:
    """:func:`play` in this process, for one-episode commands: on Ctrl-C print
    ``interrupted: <id> stored as incomplete`` and exit :data:`INTERRUPTED_EXIT`; on
    any other error the same line and exit 1 with the error — never a traceback."""
    try:
        return run_async(
            play(store, spec, agents, judge, tag=tag, models=models, scenario_id=scenario_id)
        )
    except KeyboardInterrupt:
        typer.echo(f"interrupted: {_stopped_as(store, spec.episode_id)}", err=True)
        raise typer.Exit(code=INTERRUPTED_EXIT) from None
    except Exception as error:
        typer.echo(f"interrupted: {_stopped_as(store, spec.episode_id)}", err=True)
        known = isinstance(error, StorageError | LLMError)
        fail(str(error) if known else f"{type(error).__name__}: {error}")


async def _replay_stored(store: EpisodeStore, episode_id: str) -> EpisodeResult:
    """The stored episode replayed through the runner (the same log), carrying each
    agent's model calls stored with it (scoped ``<episode_id>/<name>``), and their usage,
    so the verdict's totals are the agents' calls plus the new judge's."""
    stored = load_episode(store, episode_id)
    actions = logged_actions(stored.spec, stored.events)
    agents = [ScriptedAgent(name, actions[name]) for name in stored.spec.agent_names]
    replay = await run_episode(stored.spec, agents)
    calls = [LLMCall.model_validate(call) for call in store.read_calls(episode_id)]
    by_agent = {
        name: tuple(call for call in calls if call.scope == f"{episode_id}/{name}")
        for name in stored.spec.agent_names
    }
    return dataclasses.replace(
        replay,
        call_records=by_agent,
        usage=EpisodeUsage.of(call for agent_calls in by_agent.values() for call in agent_calls),
    )


async def judge_stored(store: EpisodeStore, episode_id: str, judge: LLMJudge) -> EvaluatedEpisode:
    """Rate the stored episode ``episode_id`` (replayed from its log) and store the
    verdict with it. The caller checks that it is complete (``save_evaluation`` refuses
    anything else)."""
    replay = await _replay_stored(store, episode_id)
    evaluated = await evaluate_episode(replay, judge)
    EpisodeRecorder(store, evaluator_model=judge.model).save_evaluation(evaluated)
    return evaluated


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
    for warning in evaluation.warnings:
        typer.echo(f"judge warning: {warning}")


def print_episode(result: EpisodeResult, evaluated: EvaluatedEpisode | None) -> None:
    """The omniscient transcript, how it ended, scores and usage."""
    print_transcript(
        f"{result.episode_id}: the full transcript (private actions marked)", result.transcript()
    )
    typer.echo(f"\nended: {result.status}, {result.reason}")
    if evaluated is not None:
        print_evaluation(evaluated)
    typer.echo(usage_line(evaluated.usage if evaluated is not None else result.usage))
