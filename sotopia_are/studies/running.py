"""`run` / `arun`: play one episode, rate it, store it — and get its record back.

The one way an episode goes from a spec to an :class:`~sotopia_are.record.EpisodeRecord`.
Failures are results, not exceptions: an agent that raises gives a ``failed`` record, a
judge that cannot rate gives a verdict without ratings (``record.failed_or_unrated``).
Only what no rerun fixes — bad configuration, an unreachable store, Ctrl-C — and errors
of our own code are raised. A model that cannot be called as configured is found before
the episode is created (:mod:`sotopia_are.llm.preflight`): a
:class:`~sotopia_are.llm.ConfigurationError`, nothing stored. The episode is never left
``running`` in the store: an
interrupt (Ctrl-C, cancellation) leaves it ``incomplete``, any other error ``failed``
with that error as its reason.

A game (a spec with ``game`` rules) is played by its rules
(:func:`~sotopia_are.studies.playing.play_episode`) and, once complete, always gets its
outcome verdict (:class:`~sotopia_are.games.GameJudge`: won and payoff per player, no
model call), before the LLM judge's when one rates it — also when the study does not
evaluate, since it costs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sotopia_are.agents import ScriptedAgent, llm_agents_for
from sotopia_are.evaluation import LLMJudge
from sotopia_are.llm import LLMConfig, LLMSession, Sampling, apreflight
from sotopia_are.record import EpisodeRecord, record_of_result
from sotopia_are.social import (
    ConversationEntry,
    EntrySink,
    EpisodeSpec,
    EpisodeStatus,
    Sink,
    SocialAgent,
    fresh_episode_id,
    script_spec,
)
from sotopia_are.social.spec import slug
from sotopia_are.storage import EpisodeRecorder, EpisodeStore, StorageError

from .config import StudyConfig
from .errors import StudyInputError
from .playing import free_judges, play_episode
from .preflight import agent_uses, judge_uses
from .rating import arate
from .twins import twin_of

__all__ = ["arun", "fresh_spec", "mark_stopped", "replay_script", "run"]

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
    preflight: bool = True,
    replace: bool = False,
    study: StudyConfig | None = None,
) -> EpisodeRecord:
    """Play ``spec``'s episode, rate it with ``judge`` (if given) and return its record.

    The coroutine behind :func:`run`, for code already inside an event loop (a notebook,
    a server, many episodes at once with ``asyncio.gather``). Whatever stops the run (an
    error below, Ctrl-C, cancellation) leaves the stored episode ``failed`` or
    ``incomplete`` with the reason, never ``running``.

    Args:
        spec: The episode: scenario, participants, goals and rules of play.
        agents: The players, in the order of ``spec.agent_names`` or by name. Leave out
            to play with LLM agents on ``models``.
        models: The agents' model, one for everyone (``"gpt-4o-mini"``) or
            ``{agent: model}``. With ``agents`` given it only labels them in the record.
        judge: The judge that rates the finished episode; ``None`` leaves it unrated
            (a game still gets its outcome verdict).
        store: Where the episode is stored as it is played (events streamed as they
            happen) and its verdict with it; ``None`` keeps it in memory only.
        config: Settings of the agents' model calls (base URL, key, timeouts) when no
            ``session`` is given.
        session: The LLM session the agents call through (default: a new one on
            ``config``); its replays and caches apply.
        sampling: The LLM agents' sampling (default ``Sampling()``: the provider's
            settings). Only with ``models``: agents of your own bring their own.
        tag: The study the episode belongs to, for listing and resuming.
        scenario_id: The id of the scenario it was made from, kept in the record
            (default: the spec's ``name``, else the episode's id).
        on_entry: Called with each conversation entry as it happens, to show the
            episode live.
        preflight: Check every model the players and the judge call before anything
            is stored (default true).
        replace: Delete a stored episode with the spec's explicit id first, to play
            it again.
        study: The study's configuration, for what the other arguments leave out: the
            agents' models and sampling (without ``agents``), the judge (when it
            evaluates), the LLM settings (without ``session`` or ``config``) and the
            tag. An argument given wins over the study's field.

    Returns:
        The episode's :class:`~sotopia_are.record.EpisodeRecord`, with the judge's
        verdict when rated (a complete game's outcome verdict before it); with a
        ``store``, ``store.load(record.episode_id) == record``. Failures are results,
        not exceptions: an agent that raises gives a ``failed`` record, a judge that
        cannot rate gives a verdict without ratings (``record.failed_or_unrated`` is
        true for both).

    Raises:
        sotopia_are.llm.ConfigurationError: Unless ``preflight`` is false, a model of
            the players or the judge cannot be called as configured (nothing stored).
        ValueError: Neither ``agents`` nor ``models`` given (nor a ``study`` naming the
            models), or ``sampling`` with ``agents``.
        sotopia_are.storage.EpisodeExistsError: ``store`` already holds a complete
            episode with the spec's explicit ``episode_id`` and ``replace`` is false.
        sotopia_are.storage.StorageError: The store cannot be reached or refused a
            write.
        sotopia_are.llm.PermanentLLMError: The judge's model cannot be used at all (a
            missing or rejected key, an unknown model).

    Example:
        ```python
        record = await sa.arun(spec, models="gpt-4o-mini", judge=sa.LLMJudge("gpt-4o"))
        ```
    """
    if study is not None:
        if agents is None and models is None:
            models = study.agent_models(spec.agent_names)
        session = session or LLMSession(config or study.llm_config())
        if judge is None and study.evaluate:
            judge = study.judge(session)
        if agents is None and sampling is None:
            sampling = study.sampling
        tag = tag or study.tag or ""
    spec = spec.for_run()
    players = _players(spec, agents, models, session, config, sampling)
    if preflight:
        await apreflight([*agent_uses(players), *judge_uses([judge] if judge else [])])
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
        result = await play_episode(spec, players, sinks=sinks)
        record = record_of_result(
            result,
            models=model_names,
            sampling=sampled,
            tag=tag,
            scenario_id=scenario_id,
            events_stored=recorder is not None,
        )
        if record.status is not EpisodeStatus.COMPLETE:
            return record  # a failed episode is not rated
        for free in free_judges(spec):
            record = await arate(record, free, store=store, preflight=False)
        if judge is None:
            return record
        return await arate(record, judge, store=store, preflight=False)
    except BaseException as error:
        if store is not None:
            mark_stopped(store, spec.episode_id, error)
        raise


@twin_of(arun)
def run(*args: Any, **kwargs: Any) -> EpisodeRecord:
    """Play one episode, rate it and store it: :func:`arun` on a new event loop.

    For scripts; inside a running event loop (a notebook, asyncio code) await
    :func:`arun` instead, which takes the same arguments.

    Args:
        spec: The episode: scenario, participants, goals and rules of play.
        agents: The players, in the order of ``spec.agent_names`` or by name. Leave out
            to play with LLM agents on ``models``.
        models: The agents' model, one for everyone (``"gpt-4o-mini"``) or
            ``{agent: model}``. With ``agents`` given it only labels them in the record.
        judge: The judge that rates the finished episode; ``None`` leaves it unrated.
        store: Where the episode is stored as it is played, and its verdict with it;
            ``None`` keeps it in memory only.
        config: Settings of the agents' model calls (base URL, key, timeouts) when no
            ``session`` is given.
        session: The LLM session the agents call through (default: a new one on
            ``config``).
        sampling: The LLM agents' sampling (default ``Sampling()``: the provider's
            settings). Only with ``models``.
        tag: The study the episode belongs to, for listing and resuming.
        scenario_id: The id of the scenario it was made from, kept in the record
            (default: the spec's ``name``, else the episode's id).
        on_entry: Called with each conversation entry as it happens.
        preflight: Check every model the players and the judge call before anything
            is stored (default true).
        replace: Delete a stored episode with the spec's explicit id first, to play
            it again.
        study: The study's configuration, for what the other arguments leave out
            (models, sampling, judge, LLM settings, tag); an argument given wins.

    Returns:
        The episode's :class:`~sotopia_are.record.EpisodeRecord`, rated when a judge was
        given. A failed agent or judge is recorded in it, not raised
        (``record.failed_or_unrated``).

    Raises:
        sotopia_are.llm.ConfigurationError: Unless ``preflight`` is false, a model of
            the players or the judge cannot be called as configured (nothing stored).
        ValueError: Neither ``agents`` nor ``models`` given (nor a ``study`` naming the
            models), or ``sampling`` with ``agents``.
        sotopia_are.storage.EpisodeExistsError: ``store`` already holds a complete
            episode with the spec's explicit ``episode_id`` and ``replace`` is false.
        sotopia_are.storage.StorageError: The store cannot be reached or refused a
            write.
        sotopia_are.llm.PermanentLLMError: The judge's model cannot be used at all (a
            missing or rejected key, an unknown model).
        RuntimeError: Called from inside a running event loop (use :func:`arun`).

    Example:
        ```python
        import sotopia_are as sa

        with sa.connect() as store:
            record = sa.run(spec, models="gpt-4o-mini", judge=sa.LLMJudge("gpt-4o"),
                            store=store, tag="pilot")
        print(record.status, record.scores)
        ```
    """
    return asyncio.run(arun(*args, **kwargs))


def fresh_spec(
    spec: EpisodeSpec,
    *,
    scenario_id: str | None = None,
    source: Path | None = None,
    max_turns: int | None = None,
) -> tuple[EpisodeSpec, str]:
    """``spec`` to play once more, under a fresh episode id (the same scenario may be
    played many times), and the scenario id it plays: ``scenario_id`` if given (a stored
    environment's id), else the spec's ``name``, else its own ``episode_id`` if it gave
    one (or was read from no file), else the slug of its file's name ``source``.
    ``max_turns`` overrides the spec's."""
    scenario = (
        scenario_id
        or spec.name
        or (spec.episode_id if spec.id_given or source is None else slug(source.stem))
    )
    fresh = spec.replace(
        episode_id=fresh_episode_id(scenario),
        **({"max_turns": max_turns} if max_turns is not None else {}),
    )
    return fresh, scenario


def replay_script(
    script: str,
    spec: EpisodeSpec,
    *,
    store: EpisodeStore | None = None,
    tag: str = "",
    scenario_id: str = "",
    on_entry: Callable[[ConversationEntry], None] | None = None,
) -> EpisodeRecord:
    """A human-written script played through the engine in ``spec``'s scenario, one turn
    per action, each by its speaker (:class:`~sotopia_are.agents.ScriptedAgent`), and
    stored as it is played when ``store`` is given: :func:`run` with the script's agents,
    unrated (rate it with :func:`~sotopia_are.studies.arate` and
    :data:`~sotopia_are.studies.SCRIPT_TERMINATION`, or use
    :func:`~sotopia_are.studies.rate_script`). ``tag``, ``scenario_id`` and ``on_entry``
    are :func:`run`'s. :class:`~sotopia_are.messages.ScriptParseError` for a line that
    does not read."""
    played = script_spec(spec, script)
    agents = ScriptedAgent.from_script(script, played.agent_names)
    return run(played, agents, store=store, tag=tag, scenario_id=scenario_id, on_entry=on_entry)


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
    session: LLMSession | None,
    config: LLMConfig | None,
    sampling: Sampling | None,
) -> Agents:
    if agents is not None:
        if sampling is not None:
            raise StudyInputError(
                "sampling is for the LLM agents built from models; give agents of your own "
                "theirs (LLMAgent(..., sampling=...))"
            )
        return agents
    if models is None:
        raise StudyInputError("give the episode's agents, or models to play it with LLM agents")
    # A session (its prompt library) is made only for agents made here: a batch gives its
    # agents, episode after episode.
    return llm_agents_for(spec, models, session or LLMSession(config), sampling=sampling)


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
