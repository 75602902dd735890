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
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence

from sotopia_are import SotopiaAreError
from sotopia_are.messages import AgentAction, GameMove
from sotopia_are.simulation.environment import Environment, EnvironmentConfig
from sotopia_are.simulation.notification_system import BaseNotificationSystem
from sotopia_are.simulation.types import CompletedEvent, EventType

from .protocol import AgentTurn, SocialAgent
from .result import EpisodeResult
from .scenario import EpisodeScenario
from .sinks import Sink, sink_callbacks
from .spec import EpisodeSpec
from .status import EpisodeStatus
from .termination import (
    EpisodeState,
    TerminationRule,
    default_rule,
    first_reason,
    is_stale,
)
from .turn_taking import make_turn_policy
from .views import EpisodeViews

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
    cast = _agents_by_name(spec, agents)
    callbacks = sink_callbacks(tuple(sinks))
    rules = (default_rule(spec),) if termination_rules is None else tuple(termination_rules)
    scenario = EpisodeScenario(spec)
    scenario.initialize()
    app = scenario.conversation
    notifications = BaseNotificationSystem(app.notification_config())
    env = Environment(
        EnvironmentConfig(start_time=0, duration=None, queue_based_loop=True, verbose=False),
        notification_system=notifications,
    )
    env.register_apps([app])
    views = EpisodeViews(spec, app.name, notifications)
    env.add_completed_event_listener(views.add)
    # Collected as they complete, so checking them costs nothing per turn.
    failed_env_events: list[CompletedEvent] = []

    def note_failed_env_event(event: CompletedEvent) -> None:
        if event.event_type is EventType.ENV and event.failed():
            failed_env_events.append(event)

    env.add_completed_event_listener(note_failed_env_event)
    for start in callbacks.on_start:
        start(spec.episode_id, spec)
    for callback in callbacks.on_event:
        env.add_completed_event_listener(functools.partial(callback, spec.episode_id))
    env.schedule(scenario.events)

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
            rules, EpisodeState(turn, participants, active, stale, last_turn, history)
        )
        if reason is not None:
            break
        env.run_until(spec.time_of_turn(turn))
        if failed_env_events:
            event = failed_env_events[0]
            status = EpisodeStatus.FAILED
            reason = (
                f"turn {turn}: ENV event {event.event_id} ({event.function_name()}) failed: "
                f"{event.get_exception()}"
            )
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
    env.stop()

    records = {name: tuple(agent.call_records()) for name, agent in cast.items()}
    result = EpisodeResult(
        spec=spec,
        status=status,
        reason=reason,
        failed_agent=failed_agent,
        turns_played=turn,
        events=tuple(env.event_log),
        call_records=records,
        views=views,
        environment=env,
        scenario=scenario,
    )
    for end in callbacks.on_end:
        end(spec.episode_id, result)
    return result


async def _choose(
    cast: Mapping[str, SocialAgent], turns: list[AgentTurn], spec: EpisodeSpec
) -> list[tuple[str, AgentAction]]:
    """Ask every actor of the turn at once; _Failure for the first that failed."""
    if len(turns) == 1:
        # The common case (round-robin, random) without gather's task overhead.
        outcomes: list[AgentAction | GameMove | BaseException] = []
        try:
            outcomes.append(await cast[turns[0].agent_name].act(turns[0]))
        except Exception as error:
            outcomes.append(error)
    else:
        outcomes = await asyncio.gather(
            *(cast[t.agent_name].act(t) for t in turns), return_exceptions=True
        )
    chosen: list[tuple[str, AgentAction]] = []
    for turn, outcome in zip(turns, outcomes, strict=True):
        name = turn.agent_name
        if isinstance(outcome, BaseException):
            if not isinstance(outcome, Exception):
                raise outcome
            raise _Failure(
                name,
                f"{name} raised {type(outcome).__name__} in turn {turn.turn_number}: {outcome}",
            )
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


def _agents_by_name(
    spec: EpisodeSpec, agents: Sequence[SocialAgent] | Mapping[str, SocialAgent]
) -> dict[str, SocialAgent]:
    if isinstance(agents, Mapping):
        cast = dict(agents)
        for key, agent in cast.items():
            if agent.name != key:
                raise ValueError(f"agent {agent.name!r} is given under the name {key!r}")
    else:
        cast = {}
        for agent in agents:
            if agent.name in cast:
                raise ValueError(f"two agents are named {agent.name!r}")
            cast[agent.name] = agent
    if sorted(cast) != sorted(spec.agent_names):
        raise ValueError(
            f"episode {spec.episode_id!r} needs one agent for each of {spec.agent_names}, "
            f"got agents named {sorted(cast)}"
        )
    return {name: cast[name] for name in spec.agent_names}


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
