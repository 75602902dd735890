"""Each agent's view of an episode, derived from the event log through `is_visible`.

:class:`EpisodeViews` is fed every completed event once, in log order (the runner wires it
as a listener of the environment), and keeps, per agent, the entries that agent may
perceive. It never re-reads the log, and renders each entry once, when it is added: every
transcript grows by appending the new lines, so a turn costs time in the entries it adds
(plus one copy of the transcript string it hands out).
"""

from __future__ import annotations

from collections.abc import Iterable

from sotopia_are.llm.valid_parts import of_valid_fields
from sotopia_are.messages import Observation, ScriptBackground
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.simulation.notification_system import BaseNotificationSystem
from sotopia_are.simulation.types import CompletedEvent

from .conversation_app import ConversationApp
from .entries import ConversationEntry, entry_of, exported_entry
from .protocol import AgentTurn, turn_of_fields
from .spec import EpisodeSpec

__all__ = ["AgentView", "EpisodeViews"]


class _Transcript:
    """:func:`render_entries` of a growing list of entries, built as entries arrive.

    New lines wait in ``_pending`` and are joined onto the text only when it is asked for,
    so the text is copied once per request, not once per entry.
    """

    __slots__ = ("_pending", "_text", "_turn")

    def __init__(self) -> None:
        self._text = ""
        self._pending: list[str] = []
        self._turn: int | None = None

    def add(self, entry: ConversationEntry, line: str, nothing: bool) -> None:
        """Append ``entry``, whose :meth:`ConversationEntry.render` is ``line`` and
        whose ``is_nothing`` is ``nothing``."""
        if nothing:
            return
        if entry.turn != self._turn:
            self._turn = entry.turn
            line = f"Turn #{entry.turn}: {line}"
        self._pending.append(line)

    def text(self) -> str:
        """The transcript so far, byte for byte what :func:`render_entries` gives."""
        if self._pending:
            joined = "\n".join(self._pending)
            # The first line carries a "Turn #" prefix, so an empty text means no lines yet.
            self._text = f"{self._text}\n{joined}" if self._text else joined
            self._pending.clear()
        return self._text


class AgentView:
    """What one agent may perceive: its background and the entries visible to it."""

    __slots__ = ("_news", "_seen", "_transcript", "background", "entries", "name")

    def __init__(self, name: str, background: ScriptBackground) -> None:
        self.name = name
        self.background = background
        self.entries: list[ConversationEntry] = []
        # The lines of new_lines, kept as entries arrive: the others' doings since the
        # last mark_seen.
        self._news: list[str] = []
        self._transcript = _Transcript()
        self._seen = 0

    def add(self, entry: ConversationEntry, line: str) -> None:
        """Append ``entry`` (visible to this agent), whose rendering is ``line``."""
        self._add(entry, line, entry.is_nothing)

    def _add(self, entry: ConversationEntry, line: str, nothing: bool) -> None:
        """:meth:`add`, told ``entry.is_nothing``."""
        self.entries.append(entry)
        if not nothing and entry.sender != self.name:
            self._news.append(line)
        self._transcript.add(entry, line, nothing)

    def transcript(self) -> str:
        """Everything this agent may see so far, turn by turn."""
        return self._transcript.text()

    def new_entries(self) -> list[ConversationEntry]:
        """The entries added since the last :meth:`mark_seen`."""
        return self.entries[self._seen :]

    def new_lines(self) -> str:
        """What this agent newly perceived since the last :meth:`mark_seen`: the rendered
        lines of the others' entries, doing nothing left out."""
        return "\n".join(self._news)

    def mark_seen(self) -> None:
        """Note that the agent has been shown every entry so far."""
        self._seen = len(self.entries)
        self._news.clear()


class EpisodeViews:
    """Every participant's view of one episode, plus the omniscient list of entries."""

    def __init__(self, spec: EpisodeSpec, app_name: str, notifications: BaseNotificationSystem):
        self.spec = spec
        self.app_name = app_name
        self.notifications = notifications
        self.entries: list[ConversationEntry] = []
        self._transcript = _Transcript()
        self.agents = {
            name: AgentView(name, spec.background_for(name)) for name in spec.agent_names
        }
        self._available = list(spec.action_types)
        # Every turn's view carries these; made once per episode.
        self._participants = tuple(spec.agent_names)
        self._available_tuple = tuple(self._available)
        self._turn_seconds = spec.turn_seconds  # read once per event (the spec is frozen)

    def add(self, event: CompletedEvent) -> None:
        """Take one completed event (call once per event, in log order)."""
        entry = entry_of(
            event,
            app_name=self.app_name,
            turn_seconds=self._turn_seconds,
            notifications=self.notifications,
        )
        if entry is not None:
            self.add_entry(entry)

    def add_entry(self, entry: ConversationEntry) -> None:
        """Take the next entry of the conversation (call once per entry, in log order)."""
        line = entry.render()
        nothing = entry.is_nothing  # asked once, of every view
        self.entries.append(entry)
        self._transcript.add(entry, line, nothing)
        for view in self.agents.values():
            if entry.visible_to(view.name):
                view._add(entry, line, nothing)

    def add_all(self, events: Iterable[CompletedEvent]) -> None:
        """Take every event of a log, in order."""
        for event in events:
            self.add(event)

    @classmethod
    def of_exported(
        cls, spec: EpisodeSpec, events: Iterable[ExportedCompletedEvent]
    ) -> EpisodeViews:
        """The views of a finished episode of ``spec`` from its completed events as ARE's
        format writes them (as an episode record keeps them): the views its runner built,
        entry for entry."""
        app = ConversationApp(spec.agent_names)
        views = cls(spec, app.name, BaseNotificationSystem(app.notification_config()))
        for event in events:
            entry = exported_entry(event, app_name=app.name, turn_seconds=spec.turn_seconds)
            if entry is not None:
                views.add_entry(entry)
        return views

    def agent_turn(self, name: str, turn_number: int) -> AgentTurn:
        """``name``'s view now, as it must act in ``turn_number``; marks it seen.

        ``observation.last_turn`` is the background in turn 0 (as in Sotopia), and after
        that what the agent newly perceived since its previous turn (others' doings; its
        own actions are in the transcript).
        """
        view = self.agents[name]
        last_turn = view.background.to_natural_language() if turn_number == 0 else view.new_lines()
        view.mark_seen()
        # Every field given, each of its type (see turn_of_fields).
        return turn_of_fields(
            {
                "agent_name": name,
                "turn_number": turn_number,
                "participants": self._participants,
                "background": view.background,
                # Made without validating again: a text and a turn number of ours, and
                # the spec's action types, validated when the spec was (a copy, the
                # turn's own).
                "observation": of_valid_fields(
                    Observation,
                    {
                        "last_turn": last_turn,
                        "turn_number": turn_number,
                        "available_actions": list(self._available),
                    },
                ),
                "transcript": view.transcript(),
                "available_actions": self._available_tuple,
                "moves": (),
                "phase": "",
            }
        )

    def transcript(self, viewer: str | None = None) -> str:
        """``viewer``'s transcript, or with None the evaluator's: omniscient by design,
        with private entries marked as such."""
        if viewer is None:
            return self._transcript.text()
        return self.agents[viewer].transcript()
