"""Notifications: which completed events are delivered to agents, as typed messages.

The environment hands every completed event to :meth:`BaseNotificationSystem.handle_event`;
those it notifies become :class:`Message` records in a :class:`MessageQueue`, which an
agent runner drains with ``get_by_timestamp``. What is notified, and in which words,
follows ARE 1.2.0:

* a user message (``AgentUserInterface.send_message_to_agent``) always, in ARE's text
  (``Received at: ...\nSender: User\nMessage: ...``) and with its attachments;
* an ENV or USER call of a tool the config lists, under the app's name or its class name;
  for ARE's standard apps in ARE's words (:mod:`.notification_texts`), for other apps its
  ``content`` arg, or the call itself;
* each tick, the reminders of a registered reminder app that have fallen due;
* a pending "wait for notification" timeout, only in a tick in which nothing else was
  notified.

The environment adds ``Environment stopped with state ...`` when its run ends.
"""

from __future__ import annotations

import enum
import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from sotopia_are.simulation.attachments import Attachment
from sotopia_are.simulation.notification_texts import (
    VerbosityLevel,
    are_notification_text,
    notified_tools_at,
)
from sotopia_are.simulation.registration import disable_events
from sotopia_are.simulation.time_manager import TimeManager
from sotopia_are.simulation.types import AbstractEvent, CompletedEvent, Event, EventType

__all__ = [
    "Attachment",
    "BaseNotificationSystem",
    "DueReminder",
    "Message",
    "MessageQueue",
    "MessageType",
    "NotificationSystem",
    "NotificationSystemConfig",
    "ReminderSource",
    "VerboseNotificationSystem",
    "VerbosityLevel",
    "get_notification_tools",
    "to_datetime",
    "uses_base_rules",
]


class MessageType(enum.Enum):
    """What a notification is."""

    USER_MESSAGE = "USER_MESSAGE"
    ENVIRONMENT_NOTIFICATION = "ENVIRONMENT_NOTIFICATION"
    ENVIRONMENT_STOP = "ENVIRONMENT_STOP"


@dataclass(frozen=True)
class Message:
    """One notification: its type, text, simulated timestamp, the files sent with it,
    and the event it came from (none for stops, reminders and timeouts)."""

    message_type: MessageType
    message: str
    timestamp: datetime
    attachments: list[Attachment] = field(default_factory=list)
    event_id: str | None = None
    app_name: str | None = None
    function_name: str | None = None
    event: CompletedEvent | None = field(default=None, compare=False, repr=False)


@dataclass
class NotificationSystemConfig:
    """Which tools notify: ``{app name or app class name: [function_name, ...]}``;
    ``notify_all_env_events`` notifies every ENV and USER event."""

    notified_tools: dict[str, list[str]] = field(default_factory=dict)
    notify_all_env_events: bool = False


def get_notification_tools(
    verbosity_level: VerbosityLevel = VerbosityLevel.LOW,
) -> dict[str, list[str]]:
    """ARE's notified tools at ``verbosity_level`` (``{app class name: [tool, ...]}``,
    aliases included; none at LOW, where only user messages and system notifications
    reach the agent)."""
    return notified_tools_at(verbosity_level)


def to_datetime(timestamp: float) -> datetime:
    """A simulated time in seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(timestamp, tz=UTC)


class MessageQueue:
    """Messages ordered by timestamp, then arrival; O(log n) put and get."""

    def __init__(self) -> None:
        self._heap: list[tuple[datetime, int, Message]] = []
        self._seq = itertools.count()

    def put(self, message: Message) -> None:
        """Queue ``message``."""
        heapq.heappush(self._heap, (message.timestamp, next(self._seq), message))

    def get_by_timestamp(self, timestamp: datetime) -> list[Message]:
        """Remove and return every message stamped at or before ``timestamp``, oldest first."""
        ready: list[Message] = []
        while self._heap and self._heap[0][0] <= timestamp:
            ready.append(heapq.heappop(self._heap)[2])
        return ready

    def has_new_messages(self, timestamp: datetime) -> bool:
        """Whether a message stamped at or before ``timestamp`` is waiting."""
        return bool(self._heap) and self._heap[0][0] <= timestamp

    def list_view(self) -> list[Message]:
        """The waiting messages in delivery order (a sorted copy)."""
        return [entry[2] for entry in sorted(self._heap, key=lambda e: e[:2])]

    def next_timestamp(self) -> datetime | None:
        """The timestamp of the next message to deliver (None if none is waiting)."""
        return self._heap[0][0] if self._heap else None

    def has_environment_stop_message(self) -> bool:
        """Whether the environment's stop message is waiting."""
        return any(entry[2].message_type is MessageType.ENVIRONMENT_STOP for entry in self._heap)

    def reset(self) -> None:
        """Drop every message."""
        self._heap.clear()

    def __len__(self) -> int:
        return len(self._heap)


class DueReminder(Protocol):
    """A reminder as a reminder app returns it (ARE's ``Reminder``): notified once, after
    which ``time_notified`` is set; ``str()`` is its text in the notification."""

    time_notified: float | None

    @property
    def already_notified(self) -> bool: ...


class ReminderSource(Protocol):
    """An app with reminders (ARE's ``ReminderApp``)."""

    name: str

    def get_due_reminders(self) -> Sequence[DueReminder]:
        """The reminders due at the app's time now, notified or not."""
        ...


_USER_INTERFACE = "AgentUserInterface"
_ENV = EventType.ENV
_USER = EventType.USER
_USER_MESSAGE_TOOL = "send_message_to_agent"
_ATTACHMENTS_ARG = "base64_utf8_encoded_attachment_contents"


class BaseNotificationSystem:
    """Turns the completed events its config selects into messages; polls a reminder
    app (see :meth:`setup_reminder_app`) each tick for due reminders.

    ``pending_timeout`` (the deadline of the pending wait, what :meth:`next_timeout`
    says) and ``notified_in_tick`` (whether anything was notified since the last tick
    closed) are read by the kernel's loop, which closes a tick only when either is set
    (closing does nothing otherwise); they are changed only by the methods here.
    """

    def __init__(self, config: NotificationSystemConfig | None = None) -> None:
        self.config = NotificationSystemConfig() if config is None else config
        self.message_queue = MessageQueue()
        self.time_manager: TimeManager | None = None
        self.reminder_app: ReminderSource | None = None
        self.pending_timeout: float | None = None
        self.notified_in_tick = False

    def initialize(self, time_manager: TimeManager) -> None:
        """Stamp messages made without an event time with ``time_manager``'s clock, and
        start empty."""
        self.time_manager = time_manager
        self.message_queue.reset()
        self.pending_timeout = None
        self.notified_in_tick = False

    def setup_reminder_app(self, reminder_app: ReminderSource) -> None:
        """Notify ``reminder_app``'s reminders as they fall due (the environment calls
        this for a registered app with ``get_due_reminders``)."""
        self.reminder_app = reminder_app

    def clear(self) -> None:
        """Drop every waiting message."""
        self.message_queue.reset()

    def get_current_time(self) -> float:
        """The clock's time now; ValueError before :meth:`initialize`."""
        if self.time_manager is None:
            raise ValueError("Time manager is not set.")
        return self.time_manager.time()

    def get_next_notification_time(self) -> float | None:
        """When the next waiting message is stamped, in seconds (None if none waits)."""
        stamp = self.message_queue.next_timestamp()
        return None if stamp is None else stamp.timestamp()

    def _put(self, message: Message) -> None:
        self.message_queue.put(message)
        self.notified_in_tick = True

    def handle_event(self, event: AbstractEvent) -> None:
        """Queue the message for ``event`` if it is one to notify."""
        event_type = event.event_type
        # Every agent's call: what is_notified says first, without its two calls.
        if event_type is not _ENV and event_type is not _USER and uses_base_rules(self):
            return
        message = self.convert_to_message(event)
        if message is not None:
            self._put(message)

    def is_notified(self, event: CompletedEvent | Event) -> bool:
        """Whether ``event`` is notified: an ENV or USER event that is a user message, or
        calls a tool the config lists (under the app's name or class name), or any, with
        ``notify_all_env_events``. The kernel asks it of an :class:`Event` before it ran,
        to know whether its record is to be notified."""
        event_type = event.event_type
        if event_type is not _ENV and event_type is not _USER:
            return False
        action = event.action
        if action is None:
            return False
        config = self.config
        if config.notify_all_env_events:
            return True
        # Cheapest tests first: this runs for every ENV event the kernel logs (the app's
        # class name read here: app_class_name() says the same, with a call).
        app = getattr(action, "app", None)
        class_name = None if app is None else type(app).__name__
        if class_name == _USER_INTERFACE and action.function_name == _USER_MESSAGE_TOOL:
            return True
        tools = config.notified_tools
        if not tools:
            return False
        function = action.function_name
        return function in tools.get(action.app_name, ()) or (
            class_name is not None and function in tools.get(class_name, ())
        )

    def convert_to_message(self, event: AbstractEvent) -> Message | None:
        """The message for ``event``, or None if it is not notified.

        A user message reads as ARE's user interface shows it, with the files sent
        along; a call of one of ARE's standard apps in ARE's words; any other call is
        its ``content`` arg (a USER_MESSAGE, as is every USER event) or the call itself.
        Stamped with the event's time (the clock's, for an event that has none).
        """
        if not isinstance(event, CompletedEvent) or not self.is_notified(event):
            return None
        args = event.get_args()
        at = self._stamp(event.event_time)
        function = event.function_name()
        class_name = event.app_class_name()
        attachments: list[Attachment] = []
        if function == _USER_MESSAGE_TOOL and class_name == _USER_INTERFACE:
            message_type = MessageType.USER_MESSAGE
            text = _user_message_text(str(args.get("content", "")), at)
            attachments = Attachment.all_of(args.get(_ATTACHMENTS_ARG))
        elif (are_text := are_notification_text(class_name, function, args)) is not None:
            message_type = MessageType.ENVIRONMENT_NOTIFICATION
            text = are_text
        elif event.event_type is EventType.USER or "content" in args:
            message_type = MessageType.USER_MESSAGE
            text = str(args.get("content", _describe_call(event, args)))
        else:
            message_type = MessageType.ENVIRONMENT_NOTIFICATION
            text = _describe_call(event, args)
        return Message(
            message_type,
            text,
            at,
            attachments,
            event_id=event.event_id,
            app_name=event.app_name(),
            function_name=function,
            event=event,
        )

    def _stamp(self, time: float | None) -> datetime:
        if time is None:
            time = self.time_manager.time() if self.time_manager is not None else 0.0
        return to_datetime(time)

    def handle_time_based_notifications(self, tick_time: float | None = None) -> None:
        """Open the tick at ``tick_time`` (default: the clock's time now): notify the
        reminder app's due reminders not notified yet, in one message.

        The reminder app is asked as a plain call, not logged (ARE logs its asking as an
        agent call each tick).
        """
        reminder_app = self.reminder_app
        if reminder_app is None:
            return
        with disable_events():
            due = reminder_app.get_due_reminders()
        fresh = [reminder for reminder in due if not reminder.already_notified]
        if fresh:
            message = self.convert_reminders_to_message(fresh, tick_time)
            if message is not None:
                self._put(message)

    def convert_reminders_to_message(
        self, due_reminders: Sequence[DueReminder], tick_time: float | None = None
    ) -> Message | None:
        """The message announcing ``due_reminders`` (each marked notified at
        ``tick_time``, default now); None without a reminder app."""
        reminder_app = self.reminder_app
        if reminder_app is None:
            return None
        now = self.get_current_time() if tick_time is None else tick_time
        for reminder in due_reminders:
            reminder.time_notified = now
        listed = "\n".join(str(reminder) for reminder in due_reminders)
        return Message(
            MessageType.ENVIRONMENT_NOTIFICATION,
            f"{reminder_app.name}: New due reminders:\n{listed}",
            to_datetime(now),
        )

    def set_wait_timeout(self, deadline: float) -> None:
        """Notify "wait timed out" at simulated time ``deadline`` unless something else is
        notified first."""
        self.pending_timeout = deadline

    def clear_wait_timeout(self) -> None:
        """Cancel a pending wait timeout."""
        self.pending_timeout = None

    def next_timeout(self) -> float | None:
        """When the pending wait timeout is due (None if there is none)."""
        return self.pending_timeout

    def handle_timeout_after_events(self, tick_time: float | None = None) -> None:
        """Close the tick at ``tick_time`` (default: the clock's time now): a
        notification in it cancels the pending wait; otherwise a due wait becomes a
        timeout notification."""
        if self.notified_in_tick:
            self.pending_timeout = None
        elif self.pending_timeout is not None:
            now = self.get_current_time() if tick_time is None else tick_time
            if now >= self.pending_timeout:
                self.pending_timeout = None
                self.message_queue.put(
                    Message(
                        MessageType.ENVIRONMENT_NOTIFICATION,
                        "Wait for notification timed out.",
                        to_datetime(now),
                    )
                )
        self.notified_in_tick = False


def _user_message_text(content: str, at: datetime) -> str:
    """A user message as ARE's user interface renders one the agent has just read."""
    stamp = at.strftime("%Y-%m-%d %H:%M:%S")
    return (
        f"Received at: {stamp}\nSender: User\nMessage: {content}\n"
        f"Already read: True\nRead at: {stamp}"
    )


def _describe_call(event: CompletedEvent, args: dict[str, Any]) -> str:
    rendered = ", ".join(f"{name}={value!r}" for name, value in args.items())
    return f"{event.app_name()}.{event.function_name()}({rendered})"


# The base rules, which handle_event knows never notify an AGENT event.
_BASE_IS_NOTIFIED = BaseNotificationSystem.is_notified
_BASE_CONVERT = BaseNotificationSystem.convert_to_message


def uses_base_rules(system: BaseNotificationSystem) -> bool:
    """Whether ``system`` decides what it notifies by the base rules: neither
    ``is_notified`` nor ``convert_to_message`` replaced, by a subclass or on the system."""
    kind = type(system)
    return (
        kind.is_notified is _BASE_IS_NOTIFIED
        and kind.convert_to_message is _BASE_CONVERT
        and "is_notified" not in system.__dict__
        and "convert_to_message" not in system.__dict__
    )


class VerboseNotificationSystem(BaseNotificationSystem):
    """A notification system configured by a :class:`VerbosityLevel`."""

    def __init__(self, verbosity_level: VerbosityLevel = VerbosityLevel.MEDIUM) -> None:
        super().__init__(NotificationSystemConfig(get_notification_tools(verbosity_level)))
        self.verbosity_level = verbosity_level

    def __call__(self) -> BaseNotificationSystem:
        """A fresh notification system of this one's level (ARE's factory call)."""
        return BaseNotificationSystem(
            NotificationSystemConfig(get_notification_tools(self.verbosity_level))
        )


class NotificationSystem(VerboseNotificationSystem):
    """ARE's default notification system: user messages and system notifications only
    (``VerbosityLevel.LOW``); a fresh one per call."""

    def __init__(self) -> None:
        super().__init__(VerbosityLevel.LOW)
