"""The conversation as read from the event log: one :class:`ConversationEntry` per event.

Agent actions are the completed ``act`` events of the :class:`ConversationApp`; things
from outside the agents are its completed ENV events that the notification system
notifies. Failed calls and events of other apps are not part of the conversation. The
entries of a live log (:func:`entry_of`) and of that log as a record keeps it, exported in
ARE's format (:func:`exported_entry`), are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sotopia_are.llm.valid_parts import slot_setters
from sotopia_are.messages import AgentAction, GameMove, render_action
from sotopia_are.simulation.actions import Action, function_name
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.simulation.data_handler.values import decode_value
from sotopia_are.simulation.notification_system import BaseNotificationSystem
from sotopia_are.simulation.types import CompletedEvent, EventType

from .conversation_app import ENVIRONMENT_SENDER, NOTIFIED_TOOLS, ConversationApp
from .visibility import is_visible

__all__ = [
    "ConversationEntry",
    "EntrySink",
    "conversation_entries",
    "entry_of",
    "exported_entry",
    "render_entries",
]


@dataclass(frozen=True, slots=True)
class ConversationEntry:
    """One thing that happened in the conversation, and who it was for.

    ``action`` is set for agent actions (for a game move, the action it reads as: speech,
    or an ``action`` naming the move); ``move`` is the game move itself; ``content`` is the
    notified text of an ENV event. ``to`` is None for something everyone perceives.
    """

    turn: int
    event_id: str
    sender: str
    to: tuple[str, ...] | None
    action: AgentAction | None = None
    content: str = ""
    move: GameMove | None = None

    def visible_to(self, viewer: str) -> bool:
        """Whether ``viewer`` may perceive this entry (see :func:`is_visible`)."""
        return is_visible(viewer, self.sender, self.to)

    @property
    def is_nothing(self) -> bool:
        """Whether this is an agent doing nothing (left out of transcripts, as in Sotopia)."""
        return self.action is not None and self.action.action_type == "none"

    def render(self) -> str:
        """The line a reader sees; private entries are marked with their audience."""
        if self.action is not None:
            return render_action(self.sender, self.action)
        audience = "" if self.to is None else f" to {list(self.to)!r}"
        if self.sender == ENVIRONMENT_SENDER:
            audience = "" if self.to is None else f", perceived by {list(self.to)!r}"
            return f"[environment{audience}] {self.content}"
        return f"[message from {self.sender}{audience}] {self.content}"


# Each field's slot, set through its descriptor (see _new_entry).
(
    _set_turn,
    _set_event_id,
    _set_sender,
    _set_to,
    _set_action,
    _set_content,
    _set_move,
) = slot_setters(ConversationEntry)
_new = object.__new__


def _new_entry(
    turn: int,
    event_id: str,
    sender: str,
    to: tuple[str, ...] | None,
    action: AgentAction | None = None,
    content: str = "",
    move: GameMove | None = None,
) -> ConversationEntry:
    """``ConversationEntry(...)`` of these values, each of its field's type (every logged
    call of the conversation makes one): the slots set through their descriptors, not
    through the frozen class's ``object.__setattr__`` by name (a third of the cost)."""
    entry = _new(ConversationEntry)
    _set_turn(entry, turn)
    _set_event_id(entry, event_id)
    _set_sender(entry, sender)
    _set_to(entry, to)
    _set_action(entry, action)
    _set_content(entry, content)
    _set_move(entry, move)
    return entry


def entry_of(
    event: CompletedEvent,
    *,
    app_name: str,
    turn_seconds: float,
    notifications: BaseNotificationSystem,
) -> ConversationEntry | None:
    """The entry of ``event``, or None if it is not part of the conversation."""
    action = event.action
    # event.failed() and action.function_name, read directly: every logged call comes here.
    if action is None or event.metadata.exception is not None or action.app_name != app_name:
        return None
    notified = None
    validated = None
    function = function_name(action.function)
    args = event.get_args()
    if event.event_type is not EventType.AGENT:
        message = notifications.convert_to_message(event)
        notified = None if message is None else message.message
    elif (
        function == "act" and isinstance(action, Action) and isinstance(action.app, ConversationApp)
    ):
        validated = action.app.take_validated_action(
            args.get("action_type", ""), args.get("argument", ""), args.get("to")
        )
    return _entry(
        event.event_type,
        function,
        args,
        turn=round((event.event_time or 0.0) / turn_seconds),
        event_id=event.event_id,
        notified=notified,
        validated=validated,
    )


def exported_entry(
    event: ExportedCompletedEvent, *, app_name: str, turn_seconds: float
) -> ConversationEntry | None:
    """The entry of a completed event as ARE's format writes it (a record keeps its events
    so), or None if it is not part of the conversation: the entry :func:`entry_of` gives
    for the event it was exported from. ``ValueError`` for an argument that does not
    decode."""
    action = event.action
    failed = event.metadata is not None and event.metadata.exception is not None
    event_type = _EVENT_TYPES.get(event.event_type)
    if action is None or failed or action.app != app_name or event_type is None:
        return None
    function = action.function or ""
    args = {arg.name: decode_value(arg.value, arg.value_type) for arg in action.args or ()}
    notified = None
    # What the notification system says of the app's notified tools: their ``content``
    # (each takes it, so a call that completed was given it).
    if event_type is not EventType.AGENT and function in NOTIFIED_TOOLS and "content" in args:
        notified = str(args["content"])
    return _entry(
        event_type,
        function,
        args,
        turn=round(event.event_time / turn_seconds),
        event_id=event.event_id,
        notified=notified,
    )


# ARE writes an event type by its name; the kernel's values differ (the importer reads both).
_EVENT_TYPES = {
    **{member.value: member for member in EventType},
    **{member.name: member for member in EventType},
}


def _entry(
    event_type: EventType,
    function: str,
    args: Mapping[str, Any],
    *,
    turn: int,
    event_id: str,
    notified: str | None,
    validated: AgentAction | None = None,
) -> ConversationEntry | None:
    """The entry of a completed call of the conversation app's ``function`` with
    ``args``; ``notified`` is the text the notification system gives an ENV event (None
    when it notifies nobody); ``validated`` the action the app made of an ``act`` call's
    ``args`` (see ``ConversationApp.take_validated_action``), if known."""
    if event_type is EventType.AGENT:
        if function == "move":
            return _move_entry(args, turn=turn, event_id=event_id)
        if function != "act":
            return None
        to = args.get("to") or None
        agent_action = (
            validated
            if validated is not None
            else AgentAction(action_type=args["action_type"], argument=args["argument"], to=to)
        )
        return _new_entry(turn, event_id, args["sender"], _audience(to), action=agent_action)
    if notified is None:
        return None
    if function == "deliver_message":
        return _new_entry(turn, event_id, args["sender"], _audience(args["to"]), content=notified)
    return _new_entry(
        turn, event_id, ENVIRONMENT_SENDER, _audience(args.get("perceivers")), content=notified
    )


def _move_entry(args: Mapping[str, Any], *, turn: int, event_id: str) -> ConversationEntry:
    sender = args["sender"]
    move = GameMove(
        move=args["move"],
        target=args.get("target"),
        amount=args.get("amount"),
        argument=args.get("argument") or "",
    )
    to = _audience(args.get("to"))
    others = [name for name in to or () if name != sender] or None
    if move.is_speech:
        reads_as = AgentAction(action_type="speak", argument=move.argument, to=others)
    else:
        # An ``action`` is one line in a script; a move's words are kept on one.
        text = " ".join(move.to_natural_language().split())
        reads_as = AgentAction(action_type="action", argument=text, to=others)
    return ConversationEntry(turn, event_id, sender, to, action=reads_as, move=move)


def _audience(names: Sequence[str] | None) -> tuple[str, ...] | None:
    return tuple(names) if names else None


def conversation_entries(
    events: Iterable[CompletedEvent],
    *,
    app_name: str,
    turn_seconds: float,
    notifications: BaseNotificationSystem,
) -> Iterator[ConversationEntry]:
    """The entries of ``events``, in log order."""
    for event in events:
        entry = entry_of(
            event, app_name=app_name, turn_seconds=turn_seconds, notifications=notifications
        )
        if entry is not None:
            yield entry


def render_entries(entries: Iterable[ConversationEntry]) -> str:
    """``Turn #n: line`` for the first line of each turn, further lines of that turn below;
    doing nothing is left out, as Sotopia leaves it out of its history."""
    lines: list[str] = []
    current: int | None = None
    for entry in entries:
        if entry.is_nothing:
            continue
        text = entry.render()
        if entry.turn != current:
            current = entry.turn
            text = f"Turn #{current}: {text}"
        lines.append(text)
    return "\n".join(lines)


class EntrySink:
    """A sink (see :mod:`sotopia_are.social.sinks`) calling ``on_entry`` with each
    conversation entry as it happens, e.g. to show an episode turn by turn."""

    def __init__(
        self,
        turn_seconds: float,
        on_entry: Callable[[ConversationEntry], None],
        *,
        app_name: str = "ConversationApp",
    ) -> None:
        self._turn_seconds = turn_seconds
        self._on_entry = on_entry
        self._app_name = app_name
        self._notifications = BaseNotificationSystem(
            ConversationApp(name=app_name).notification_config()
        )

    def on_event(self, episode_id: str, event: CompletedEvent) -> None:
        """Call ``on_entry`` if ``event`` is part of the conversation."""
        entry = entry_of(
            event,
            app_name=self._app_name,
            turn_seconds=self._turn_seconds,
            notifications=self._notifications,
        )
        if entry is not None:
            self._on_entry(entry)
