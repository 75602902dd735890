"""`run` / `arun`: play one episode, rate it, store it — and get its record back.

The one way an episode goes from a spec to an :class:`~sotopia_are.record.EpisodeRecord`.
Failures are results, not exceptions: an agent that raises gives a ``failed`` record, a
judge that cannot rate gives a verdict without ratings (``record.failed_or_unrated``).
Only what no rerun fixes — bad configuration, an unreachable store, Ctrl-C — and errors
of our own code are raised, and the episode is never left ``running`` in the store: an
interrupt (Ctrl-C, cancellation) leaves it ``incomplete``, any other error ``failed``
with that error as its reason.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence

from sotopia_are.agents import llm_agents_for
from sotopia_are.evaluation import LLMJudge, run_evaluated_episode
from sotopia_are.llm import LLMConfig, LLMSession, Sampling
from sotopia_are.record import EpisodeRecord, Verdict, record_of_result
from sotopia_are.social import (
    ConversationEntry,
    EntrySink,
    EpisodeSpec,
    EpisodeStatus,
    Sink,
    SocialAgent,
    run_episode,
)
from sotopia_are.storage import EpisodeRecorder, EpisodeStore, StorageError

__all__ = ["arun", "mark_stopped", "run"]

Agents = Sequence[SocialAgent] | Mapping[str, SocialAgent]


async def arun(
    spec: EpisodeSpec,
    agents: Agents | None = None,
    *,
    models: str | Mapping[str, str] | None = None,
    judge: LLMJudge | None = None,
    store: EpisodeStore | None = None,
    config: LLMConfig | None = None,
    session: LLMSession | None = None,
    sampling: Sampling | None = None,
    tag: str = "",
    scenario_id: str = "",
    on_entry: Callable[[ConversationEntry], None] | None = None,
    replace: bool = False,
) -> EpisodeRecord:
    """Play ``spec``'s episode, rate it with ``judge`` (if given) and return its record.

    A spec without an ``episode_id`` is played under a fresh one each call
    (``EpisodeSpec.for_run``: ``<scenario words>-<6 hex>``), so the same spec can be run
    again and again. A spec with one is that episode: if ``store`` holds it complete,
    :class:`~sotopia_are.storage.EpisodeExistsError` naming the ways out, before anything
    runs — unless ``replace``, which deletes the stored one first (a failed or
    interrupted one is played again under its id, as a resumed batch does).

    The players are ``agents`` (``models`` then only labels them in the record), or LLM
    agents on ``models`` (one model for everyone, or ``{agent: model}``) calling through
    ``session`` (default: a new session on ``config``) with ``sampling`` (default
    ``Sampling()``, the provider's settings; ``ValueError`` with ``agents``, which bring
    their own). The record keeps every player's ``sampling`` (``record.agent_sampling``)
    and the judge's (in its verdict). With a ``store``, the episode is
    stored as it is played (events streamed as they happen) and the verdict with it;
    ``store.load(record.episode_id) == record``. ``on_entry`` is called with each
    conversation entry as it happens (to show the episode live).
    """
    spec = spec.for_run()
    players = _players(spec, agents, models, session or LLMSession(config), sampling)
    model_names = _model_names(spec, models)
    sampled = _sampling_of(players)
    recorder = None
    if store is not None:
        if replace:
            store.delete_episode(spec.episode_id)
        recorder = EpisodeRecorder(store, tag=tag, models=model_names, sampling=sampled)
        recorder.start(spec, scenario_id=scenario_id)
    sinks: list[Sink] = [recorder] if recorder else []
    if on_entry is not None:
        sinks.append(EntrySink(spec.turn_seconds, on_entry))
    try:
        if judge is None:
            result = await run_episode(spec, players, sinks=sinks)
            return record_of_result(
                result, models=model_names, sampling=sampled, tag=tag, scenario_id=scenario_id
            )
        evaluated = await run_evaluated_episode(spec, players, judge, sinks=sinks)
        record = record_of_result(
            evaluated.episode,
            models=model_names,
            sampling=sampled,
            tag=tag,
            scenario_id=scenario_id,
        )
        verdict = Verdict.of(evaluated, judge)
        if verdict is None:
            return record
        if store is not None:
            return store.add_verdict(spec.episode_id, verdict, stored=record)
        return record.with_verdict(verdict)
    except BaseException as error:
        if store is not None:
            mark_stopped(store, spec.episode_id, error)
        raise


def run(
    spec: EpisodeSpec,
    agents: Agents | None = None,
    *,
    models: str | Mapping[str, str] | None = None,
    judge: LLMJudge | None = None,
    store: EpisodeStore | None = None,
    config: LLMConfig | None = None,
    session: LLMSession | None = None,
    sampling: Sampling | None = None,
    tag: str = "",
    scenario_id: str = "",
    on_entry: Callable[[ConversationEntry], None] | None = None,
    replace: bool = False,
) -> EpisodeRecord:
    """:func:`arun` on a new event loop (for scripts; inside asyncio, await ``arun``)."""
    return asyncio.run(
        arun(
            spec,
            agents,
            models=models,
            judge=judge,
            store=store,
            config=config,
            session=session,
            sampling=sampling,
            tag=tag,
            scenario_id=scenario_id,
            on_entry=on_entry,
            replace=replace,
        )
    )


def mark_stopped(store: EpisodeStore, episode_id: str, error: BaseException) -> None:
    """End a still-running episode that ``error`` stopped: ``incomplete`` after an
    interrupt (Ctrl-C, cancellation, exit), else ``failed`` with the error as its reason
    (the episode itself went wrong; a resumed batch reruns either, a bounded number of
    times)."""
    # The store may be unreachable (the error being raised may say so) or the episode no
    # longer running (it finished; only its rating failed): then nothing more to record.
    with contextlib.suppress(StorageError):
        if isinstance(error, Exception):  # not Ctrl-C, cancellation or exit
            store.finish_episode(
                episode_id,
                status=EpisodeStatus.FAILED,
                error=f"failed: {type(error).__name__}: {error}",
            )
        else:
            store.mark_incomplete(
                episode_id, "interrupted: its run was stopped (Ctrl-C or cancelled)"
            )


def _players(
    spec: EpisodeSpec,
    agents: Agents | None,
    models: str | Mapping[str, str] | None,
    session: LLMSession,
    sampling: Sampling | None,
) -> Agents:
    if agents is not None:
        if sampling is not None:
            raise ValueError(
                "sampling is for the LLM agents built from models; give agents of your own "
                "theirs (LLMAgent(..., sampling=...))"
            )
        return agents
    if models is None:
        raise ValueError("give the episode's agents, or models to play it with LLM agents")
    return llm_agents_for(spec, models, session, sampling=sampling)


def _sampling_of(players: Agents) -> dict[str, Sampling]:
    """The sampling of each player that has one (an :class:`LLMAgent`), by name."""
    found: dict[str, Sampling] = {}
    for agent in players.values() if isinstance(players, Mapping) else players:
        sampling = getattr(agent, "sampling", None)
        if isinstance(sampling, Sampling):
            found[agent.name] = sampling
    return found


def _model_names(spec: EpisodeSpec, models: str | Mapping[str, str] | None) -> dict[str, str]:
    if models is None:
        return {}
    if isinstance(models, str):
        return dict.fromkeys(spec.agent_names, models)
    return dict(models)
