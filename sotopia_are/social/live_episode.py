"""`LiveEpisode`: one episode's kernel while a runner plays it.

It wires what every runner needs around an :class:`Environment` on a virtual clock: the
scenario's app and scheduled ENV events, the views every agent's turn is derived from,
the sinks, and a watch on ENV events that fail. A runner then alternates
:meth:`LiveEpisode.run_until_turn` and its agents' actions, and ends with
:meth:`LiveEpisode.result` and :meth:`LiveEpisode.announce_end`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

from sotopia_are.simulation.environment import Environment, EnvironmentConfig
from sotopia_are.simulation.notification_system import BaseNotificationSystem
from sotopia_are.simulation.types import CompletedEvent, EventType

from .protocol import SocialAgent
from .result import EpisodeResult
from .scenario import EpisodeScenario
from .sinks import Sink, sink_callbacks
from .spec import EpisodeSpec
from .status import EpisodeStatus
from .views import EpisodeViews

__all__ = ["LiveEpisode"]


class LiveEpisode:
    """The kernel of one episode of ``spec`` being played, streaming to ``sinks``.

    Constructing it tells the sinks the episode starts and schedules the spec's ENV
    events; nothing runs until :meth:`run_until_turn`. TypeError for a non-sink.
    """

    def __init__(self, spec: EpisodeSpec, sinks: Sequence[Sink] = ()) -> None:
        self.spec = spec
        self._callbacks = sink_callbacks(tuple(sinks))
        self.scenario = EpisodeScenario(spec)
        self.scenario.initialize()
        self.app = self.scenario.conversation
        notifications = BaseNotificationSystem(self.app.notification_config())
        self.env = Environment(
            EnvironmentConfig(start_time=0, duration=None, queue_based_loop=True, verbose=False),
            notification_system=notifications,
        )
        self.env.register_apps([self.app])
        self.views = EpisodeViews(spec, self.app.name, notifications)
        # Collected as they complete, so checking them costs nothing per turn.
        self._failed_env_events: list[CompletedEvent] = []
        # What this episode hangs on the environment, taken off again by result().
        self._listeners: list[Callable[[CompletedEvent], None]] = [
            self.views.add,
            self._note_failed_env_event,
        ]
        for listener in self._listeners:
            self.env.add_completed_event_listener(listener)
        for start in self._callbacks.on_start:
            start(spec.episode_id, spec)
        for callback in self._callbacks.on_event:
            listener = functools.partial(callback, spec.episode_id)
            self._listeners.append(listener)
            self.env.add_completed_event_listener(listener)
        self.env.schedule(self.scenario.events)

    def _note_failed_env_event(self, event: CompletedEvent) -> None:
        if event.event_type is EventType.ENV and event.failed():
            self._failed_env_events.append(event)

    def run_until_turn(self, turn: int) -> str | None:
        """Run every event due by ``turn``'s time; the failure reason if an ENV event has
        failed so far (the episode must then end before the turn), else None."""
        self.env.run_until(self.spec.time_of_turn(turn))
        if not self._failed_env_events:
            return None
        event = self._failed_env_events[0]
        return (
            f"turn {turn}: ENV event {event.event_id} ({event.function_name()}) failed: "
            f"{event.get_exception()}"
        )

    def result(
        self,
        cast: Mapping[str, SocialAgent],
        *,
        status: EpisodeStatus,
        reason: str,
        failed_agent: str | None,
        turns_played: int,
    ) -> EpisodeResult:
        """Stop the kernel and give the episode's result (the sinks are not told yet).

        The stopped kernel is then let go of: this episode's listeners leave the
        environment and its app no longer logs there (its later calls, if any, are not in
        the result's log). An environment, its app and its logged events otherwise refer
        to one another in cycles, which reference counting cannot free: every finished
        episode stayed in memory until the cyclic garbage collector walked it (a batch
        worker, collecting every 100,000 allocations, held some 380 finished episodes
        at a time; docs/benchmarks.md, round 13). Let go of, it is freed as soon as the
        result is dropped."""
        self.env.stop()
        for listener in self._listeners:
            self.env.remove_completed_event_listener(listener)
        self._listeners.clear()
        self.app.unregister_from_env("environment")  # the key register_apps gave it
        return EpisodeResult(
            spec=self.spec,
            status=status,
            reason=reason,
            failed_agent=failed_agent,
            turns_played=turns_played,
            events=tuple(self.env.event_log),
            call_records={name: tuple(agent.call_records()) for name, agent in cast.items()},
            views=self.views,
            environment=self.env,
            scenario=self.scenario,
        )

    def announce_end(self, result: EpisodeResult) -> None:
        """Tell the sinks the episode ended with ``result``."""
        for end in self._callbacks.on_end:
            end(self.spec.episode_id, result)
