"""Each agent's view of an episode, derived from the event log through `is_visible`.

:class:`EpisodeViews` is fed every completed event once, in log order (the runner wires it
as a listener of the environment), and keeps, per agent, the entries that agent may
perceive. It never re-reads the log, so a turn costs time in the entries it adds.
"""

from __future__ import annotations

from collections.abc import Iterable

from sotopia_are.messages import Observation, ScriptBackground
from sotopia_are.simulation.notification_system import BaseNotificationSystem
from sotopia_are.simulation.types import CompletedEvent

from .entries import ConversationEntry, entry_of, render_entries
from .protocol import AgentTurn
from .spec import EpisodeSpec

__all__ = ["AgentView", "EpisodeViews"]


class AgentView:
    """What one agent may perceive: its background and the entries visible to it."""

    __slots__ = ("_seen", "background", "entries", "name")

    def __init__(self, name: str, background: ScriptBackground) -> None:
        self.name = name
        self.background = background
        self.entries: list[ConversationEntry] = []
        self._seen = 0

    def transcript(self) -> str:
        """Everything this agent may see so far, turn by turn."""
        return render_entries(self.entries)

    def new_entries(self) -> list[ConversationEntry]:
        """The entries added since the last :meth:`mark_seen`."""
        return self.entries[self._seen :]

    def mark_seen(self) -> None:
        """Note that the agent has been shown every entry so far."""
        self._seen = len(self.entries)


class EpisodeViews:
    """Every participant's view of one episode, plus the omniscient list of entries."""

    def __init__(self, spec: EpisodeSpec, app_name: str, notifications: BaseNotificationSystem):
        self.spec = spec
        self.app_name = app_name
        self.notifications = notifications
        self.entries: list[ConversationEntry] = []
        self.agents = {
            name: AgentView(name, spec.background_for(name)) for name in spec.agent_names
        }
        self._available = list(spec.action_types)

    def add(self, event: CompletedEvent) -> None:
        """Take one completed event (call once per event, in log order)."""
        entry = entry_of(
            event,
            app_name=self.app_name,
            turn_seconds=self.spec.turn_seconds,
            notifications=self.notifications,
        )
        if entry is None:
            return
        self.entries.append(entry)
        for view in self.agents.values():
            if entry.visible_to(view.name):
                view.entries.append(entry)

    def add_all(self, events: Iterable[CompletedEvent]) -> None:
        """Take every event of a log, in order."""
        for event in events:
            self.add(event)

    def agent_turn(self, name: str, turn_number: int) -> AgentTurn:
        """``name``'s view now, as it must act in ``turn_number``; marks it seen.

        ``observation.last_turn`` is the background in turn 0 (as in Sotopia), and after
        that what the agent newly perceived since its previous turn (others' doings; its
        own actions are in the transcript).
        """
        view = self.agents[name]
        if turn_number == 0:
            last_turn = view.background.to_natural_language()
        else:
            last_turn = "\n".join(
                entry.render()
                for entry in view.new_entries()
                if not entry.is_nothing and entry.sender != name
            )
        view.mark_seen()
        return AgentTurn(
            agent_name=name,
            turn_number=turn_number,
            participants=tuple(self.spec.agent_names),
            background=view.background,
            observation=Observation(
                last_turn=last_turn,
                turn_number=turn_number,
                available_actions=list(self._available),
            ),
            transcript=view.transcript(),
            available_actions=tuple(self._available),
        )

    def transcript(self, viewer: str | None = None) -> str:
        """``viewer``'s transcript, or with None the evaluator's: omniscient by design,
        with private entries marked as such."""
        if viewer is None:
            return render_entries(self.entries)
        return self.agents[viewer].transcript()
