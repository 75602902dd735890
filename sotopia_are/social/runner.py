"""The episode runner: a thin asyncio driver over a step-able environment.

Each episode gets its own :class:`Environment` on a virtual clock. Turn ``n`` is played at
simulated time ``n * spec.turn_seconds``: first the environment runs every scheduled ENV
event due by then, then the turn's actors are shown their views (derived from the log
through the visibility function) and asked, concurrently, for one action each; the
actions are applied through :meth:`ConversationApp.act`, one AGENT event each. Agents in
a simultaneous turn all choose before any of their actions is logged.

An agent that raises, or returns an action it may not take, ends its episode with status
``failed`` and the reason; it is never turned into "did nothing". Likewise a scheduled ENV
event that raises ends the episode as ``failed`` before the turn it precedes, naming the
event and its error: the agents must never play on without something that should have
happened.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence

from sotopia_are import SotopiaAreError
from sotopia_are.messages import AgentAction

from .asking import AgentFault, ask_agents
from .cast import agents_by_name
from .live_episode import LiveEpisode
from .protocol import AgentTurn, SocialAgent
from .result import EpisodeResult
from .sinks import Sink
from .spec import EpisodeSpec
from .status import EpisodeStatus
from .termination import (
    TerminationRule,
    default_rule,
    first_reason,
    is_stale,
    state_of,
)
from .turn_taking import make_turn_policy

__all__ = ["AgentFactory", "run_episode", "run_episodes"]

AgentFactory = Callable[[EpisodeSpec], Sequence[SocialAgent] | Mapping[str, SocialAgent]]
"""Makes the agents of one episode (called when the episode starts)."""


class _Failure(SotopiaAreError):
    """Ends an episode as failed: ``agent`` (or None for the turn order) and why."""

    def __init__(self, agent: str | None, reason: str) -> None:
        super().__init__(reason)
        self.agent = agent
        self.reason = reason


async def run_episode(
    spec: EpisodeSpec,
    agents: Sequence[SocialAgent] | Mapping[str, SocialAgent],
    *,
    sinks: Sequence[Sink] = (),
    termination_rules: Sequence[TerminationRule] | None = None,
) -> EpisodeResult:
    """Play one episode of ``spec`` with ``agents`` (one per name in ``spec.agent_names``).

    ``termination_rules`` default to :func:`default_rule` (the spec's ``max_turns`` and
    ``max_stale_turns``); the first rule that gives a reason before a turn ends the
    episode. ``sinks`` are told the episode starts, receive every completed event as it
    is logged, then the result.
    ValueError if the agents do not match the spec's participants.
    """
    cast = agents_by_name(spec, agents)
    rules = (default_rule(spec),) if termination_rules is None else tuple(termination_rules)
    live = LiveEpisode(spec, sinks)
    app, views = live.app, live.views

    policy = make_turn_policy(spec)
    participants = tuple(spec.agent_names)
    turn = stale = 0
    last_turn: tuple[tuple[str, AgentAction], ...] = ()
    history: list[tuple[str, AgentAction]] = []
    status = EpisodeStatus.COMPLETE
    failed_agent: str | None = None
    while True:
        active = app.active_participants()
        reason = first_reason(
            rules, state_of(turn, participants, active, stale, last_turn, history)
        )
        if reason is not None:
            break
        reason = live.run_until_turn(turn)
        if reason is not None:
            status = EpisodeStatus.FAILED
            break
        try:
            try:
                actors = policy.actors(turn, active)
            except ValueError as error:
                raise _Failure(None, f"turn {turn}: {error}") from None
            chosen = await _choose(cast, [views.agent_turn(name, turn) for name in actors], spec)
            for name, action in chosen:
                try:
                    app.act(name, action.action_type, action.argument, action.to)
                except ValueError as error:
                    raise _Failure(name, f"{name}'s action was rejected: {error}") from None
        except _Failure as failure:
            status, failed_agent, reason = EpisodeStatus.FAILED, failure.agent, failure.reason
            break
        stale = stale + 1 if is_stale(chosen) else 0
        last_turn = tuple(chosen)
        history.extend(chosen)
        turn += 1

    result = live.result(
        cast, status=status, reason=reason, failed_agent=failed_agent, turns_played=turn
    )
    live.announce_end(result)
    return result


async def _choose(
    cast: Mapping[str, SocialAgent], turns: list[AgentTurn], spec: EpisodeSpec
) -> list[tuple[str, AgentAction]]:
    """Ask every actor of the turn at once; _Failure for the first that failed."""
    answers = await ask_agents(cast, turns)
    if isinstance(answers, AgentFault):
        raise _Failure(answers.agent, answers.reason)
    chosen: list[tuple[str, AgentAction]] = []
    for turn, outcome in zip(turns, answers, strict=True):
        name = turn.agent_name
        if not isinstance(outcome, AgentAction):
            raise _Failure(name, f"{name} returned {outcome!r}, not an AgentAction")
        if outcome.action_type not in spec.action_types:
            raise _Failure(
                name,
                f"{name} chose {outcome.action_type!r}, which is not available "
                f"(available: {spec.action_types})",
            )
        chosen.append((name, outcome))
    return chosen


async def run_episodes(
    specs: Iterable[EpisodeSpec],
    make_agents: AgentFactory,
    *,
    max_concurrent: int = 100,
    sinks: Sequence[Sink] = (),
    termination_rules: Callable[[EpisodeSpec], Sequence[TerminationRule]] | None = None,
) -> list[EpisodeResult]:
    """Run many episodes, at most ``max_concurrent`` at once; results in ``specs`` order.

    Agents are made by ``make_agents(spec)`` when their episode starts. Per-model limits
    come from the agents' LLM layer. Agent failures are recorded in the results; any other
    error (a bad spec, a failing sink) cancels the remaining episodes and propagates.
    ValueError if two specs share an episode id (sinks tell episodes apart by it).
    """
    if max_concurrent < 1:
        raise ValueError(f"max_concurrent must be >= 1, got {max_concurrent}")
    ordered = list(specs)
    seen: set[str] = set()
    for spec in ordered:
        if spec.episode_id in seen:
            raise ValueError(f"two episodes have the id {spec.episode_id!r}")
        seen.add(spec.episode_id)
    gate = asyncio.Semaphore(max_concurrent)

    async def one(spec: EpisodeSpec) -> EpisodeResult:
        async with gate:
            return await run_episode(
                spec,
                make_agents(spec),
                sinks=sinks,
                termination_rules=None if termination_rules is None else termination_rules(spec),
            )

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(spec)) for spec in ordered]
    return [task.result() for task in tasks]
