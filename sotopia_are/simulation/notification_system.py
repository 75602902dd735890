"""Notifications: which completed events are delivered to agents, as typed messages.

The environment hands every completed event to :meth:`BaseNotificationSystem.handle_event`;
those the config selects become :class:`Message` records in a :class:`MessageQueue`, which
an agent runner drains with ``get_by_timestamp``. A pending "wait for notification" timeout
fires only in a tick in which nothing else was notified.
"""

from __future__ import annotations

import enum
import heapq
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sotopia_are.simulation.time_manager import TimeManager
from sotopia_are.simulation.types import AbstractEvent, CompletedEvent, EventType, StopEvent

__all__ = [
    "BaseNotificationSystem",
    "Message",
    "MessageQueue",
    "MessageType",
    "NotificationSystem",
    "NotificationSystemConfig",
    "VerboseNotificationSystem",
    "VerbosityLevel",
    "get_notification_tools",
    "to_datetime",
]


class VerbosityLevel(enum.Enum):
    """How much of the environment agents are told about.

    LOW: user messages and system notifications only. MEDIUM: also the ENV events of the
    configured tools (likely consequences of agent actions). HIGH: every ENV event.
    """

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class MessageType(enum.Enum):
    """What a notification is."""

    USER_MESSAGE = "USER_MESSAGE"
    ENVIRONMENT_NOTIFICATION = "ENVIRONMENT_NOTIFICATION"
    ENVIRONMENT_STOP = "ENVIRONMENT_STOP"


@dataclass(frozen=True)
class Message:
    """One notification: its type, text, simulated timestamp and where it came from."""

    message_type: MessageType
    message: str
    timestamp: datetime
    event_id: str | None = None
    app_name: str | None = None
    function_name: str | None = None
    event: CompletedEvent | None = field(default=None, compare=False, repr=False)


@dataclass
class NotificationSystemConfig:
    """Which tools notify: ``{app_name: [function_name, ...]}``; ``notify_all_env_events``
    notifies every ENV and USER event."""

    notified_tools: dict[str, list[str]] = field(default_factory=dict)
    notify_all_env_events: bool = False


_USER_TOOLS: dict[str, list[str]] = {"AgentUserInterface": ["send_message_to_agent"]}


def get_notification_tools(verbosity_level: VerbosityLevel) -> NotificationSystemConfig:
    """The config of a verbosity level (MEDIUM adds no tools of its own in the kernel;
    apps of higher layers pass theirs to :class:`NotificationSystemConfig`)."""
    return NotificationSystemConfig(
        notified_tools={app: list(tools) for app, tools in _USER_TOOLS.items()},
        notify_all_env_events=verbosity_level is VerbosityLevel.HIGH,
    )


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

    def reset(self) -> None:
        """Drop every message."""
        self._heap.clear()

    def __len__(self) -> int:
        return len(self._heap)


class BaseNotificationSystem:
    """Turns the completed events its config selects into messages."""

    def __init__(self, config: NotificationSystemConfig | None = None) -> None:
        self.config = NotificationSystemConfig() if config is None else config
        self.message_queue = MessageQueue()
        self.time_manager: TimeManager | None = None
        self._timeout_at: float | None = None
        self._notified_this_tick = False

    def initialize(self, time_manager: TimeManager) -> None:
        """Stamp timeout notifications with ``time_manager``'s clock and start empty."""
        self.time_manager = time_manager
        self.message_queue.reset()
        self._timeout_at = None
        self._notified_this_tick = False

    def handle_event(self, event: AbstractEvent) -> None:
        """Queue the message for ``event`` if it is one to notify."""
        message = self.convert_to_message(event)
        if message is not None:
            self.message_queue.put(message)
            self._notified_this_tick = True

    def is_notified(self, event: CompletedEvent) -> bool:
        """Whether ``event`` (an ENV or USER event) is one the config notifies."""
        if event.event_type is not EventType.ENV and event.event_type is not EventType.USER:
            return False
        if self.config.notify_all_env_events:
            return True
        action = event.action
        if action is None:
            return False
        tools = self.config.notified_tools.get(action.app_name)
        return tools is not None and action.function_name in tools

    def convert_to_message(self, event: AbstractEvent) -> Message | None:
        """The message for ``event``, or None if it is not notified."""
        if isinstance(event, StopEvent) or (
            isinstance(event, CompletedEvent) and event.event_type is EventType.STOP
        ):
            return Message(
                MessageType.ENVIRONMENT_STOP,
                "The environment has stopped.",
                to_datetime(event.event_time or 0.0),
                event_id=event.event_id,
            )
        if not isinstance(event, CompletedEvent) or not self.is_notified(event):
            return None
        args = event.get_args()
        if event.event_type is EventType.USER or "content" in args:
            message_type = MessageType.USER_MESSAGE
            text = str(args.get("content", _describe_call(event, args)))
        else:
            message_type = MessageType.ENVIRONMENT_NOTIFICATION
            text = _describe_call(event, args)
        return Message(
            message_type,
            text,
            to_datetime(event.event_time or 0.0),
            event_id=event.event_id,
            app_name=event.app_name(),
            function_name=event.function_name(),
            event=event,
        )

    def set_wait_timeout(self, deadline: float) -> None:
        """Notify "wait timed out" at simulated time ``deadline`` unless something else is
        notified first."""
        self._timeout_at = deadline

    def clear_wait_timeout(self) -> None:
        """Cancel a pending wait timeout."""
        self._timeout_at = None

    def next_timeout(self) -> float | None:
        """When the pending wait timeout is due (None if there is none)."""
        return self._timeout_at

    def handle_timeout_after_events(self, tick_time: float) -> None:
        """Close the tick at ``tick_time``: a notification in it cancels the pending wait;
        otherwise a due wait becomes a timeout notification."""
        if self._notified_this_tick:
            self._timeout_at = None
        elif self._timeout_at is not None and tick_time >= self._timeout_at:
            self._timeout_at = None
            self.message_queue.put(
                Message(
                    MessageType.ENVIRONMENT_NOTIFICATION,
                    "Wait for notification timed out.",
                    to_datetime(tick_time),
                )
            )
        self._notified_this_tick = False


def _describe_call(event: CompletedEvent, args: dict[str, Any]) -> str:
    rendered = ", ".join(f"{name}={value!r}" for name, value in args.items())
    return f"{event.app_name()}.{event.function_name()}({rendered})"


class VerboseNotificationSystem(BaseNotificationSystem):
    """A notification system configured by a :class:`VerbosityLevel`."""

    def __init__(self, verbosity_level: VerbosityLevel = VerbosityLevel.MEDIUM) -> None:
        super().__init__(get_notification_tools(verbosity_level))
        self.verbosity_level = verbosity_level


class NotificationSystem(VerboseNotificationSystem):
    """ARE's default notification system: user messages and system notifications only
    (``VerbosityLevel.LOW``); a fresh one per call."""

    def __init__(self) -> None:
        super().__init__(VerbosityLevel.LOW)
