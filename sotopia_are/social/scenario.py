"""`EpisodeScenario`: an episode spec as an ARE scenario (its app and scheduled ENV events).

Building it is deterministic: app seeds and event ids derive from the episode id and seed.
"""

from __future__ import annotations

from typing import Any

from sotopia_are.simulation.scenarios.scenario import Scenario
from sotopia_are.simulation.types import Event, EventType

from .conversation_app import ConversationApp
from .spec import EpisodeSpec

__all__ = ["EpisodeScenario"]


class EpisodeScenario(Scenario):
    """The ARE scenario of ``spec``: one :class:`ConversationApp` and the spec's ENV events."""

    queue_based_loop = True

    def __init__(self, spec: EpisodeSpec, **fields: Any) -> None:
        super().__init__(
            scenario_id=spec.episode_id,
            seed=spec.seed,
            duration=None,
            nb_turns=spec.max_turns,
            **fields,
        )
        self.spec = spec

    @property
    def conversation(self) -> ConversationApp:
        """The scenario's conversation app."""
        return self.get_typed_app(ConversationApp)

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        self.apps = [ConversationApp(self.spec.agent_names)]

    def build_events_flow(self) -> None:
        app = self.conversation
        events: list[Event] = []
        for scheduled in self.spec.env_events:
            if scheduled.kind == "announce":
                event = Event.from_function(
                    app.announce, EventType.ENV, content=scheduled.content, perceivers=scheduled.to
                )
            else:
                event = Event.from_function(
                    app.deliver_message,
                    EventType.ENV,
                    sender=scheduled.sender,
                    content=scheduled.content,
                    to=scheduled.to,
                )
            events.append(event.at_absolute_time(self.spec.time_of_turn(scheduled.turn)))
        self.events = list(events)
