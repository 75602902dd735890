"""TimeManager (real and virtual) and the notification system."""

from __future__ import annotations

import time
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from _kernel_apps import AgentUserInterface, CounterApp, Reminder, ReminderApp
from hypothesis import given, settings
from hypothesis import strategies as st

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.environment import Environment, EnvironmentConfig
from sotopia_are.simulation.notification_system import (
    Attachment,
    BaseNotificationSystem,
    Message,
    MessageQueue,
    MessageType,
    NotificationSystemConfig,
    VerboseNotificationSystem,
    VerbosityLevel,
    get_notification_tools,
    to_datetime,
)
from sotopia_are.simulation.time_manager import TimeManager
from sotopia_are.simulation.types import (
    CompletedEvent,
    Event,
    EventType,
    OperationType,
    StopEvent,
    event_registered,
)


def test_virtual_clock_moves_only_when_told() -> None:
    clock = TimeManager(virtual=True)
    assert clock.time() == 0 and clock.time_passed() == 0
    clock.add_offset(5)
    clock.set_time(12)
    assert clock.time() == 12 and clock.time_passed() == 12
    with pytest.raises(ValueError, match="backwards"):
        clock.set_time(11)
    clock.reset(100)
    assert clock.time() == 100 and clock.time_passed() == 0


def test_real_clock_runs_and_pauses() -> None:
    clock = TimeManager(start_time=1000)
    time.sleep(0.05)
    assert 1000.04 < clock.time() < 1001
    clock.pause()
    frozen = clock.time()
    time.sleep(0.05)
    assert clock.time() == frozen
    clock.resume()
    time.sleep(0.02)
    assert 0.02 <= clock.time() - frozen < 0.5  # generous: the machine may be busy


def completed(app_name: str, function: str, event_type: EventType, at: float) -> CompletedEvent:
    app = AgentUserInterface() if app_name == "AgentUserInterface" else CounterApp(app_name)
    event = Event.from_function(getattr(app, function), event_type=event_type)
    if function == "send_message_to_agent":
        assert event.action is not None
        event.action.args = {"content": "hello"}
    else:
        assert event.action is not None
        event.action.args = {"amount": 1}
    return event.execute(event_time=at)


def test_message_queue_returns_due_messages_oldest_first() -> None:
    queue = MessageQueue()
    for stamp, text in [(30, "c"), (10, "a"), (20, "b"), (10, "a2")]:
        queue.put(Message(MessageType.ENVIRONMENT_NOTIFICATION, text, to_datetime(stamp)))
    assert [m.message for m in queue.get_by_timestamp(to_datetime(20))] == ["a", "a2", "b"]
    assert queue.has_new_messages(to_datetime(30)) and len(queue) == 1
    assert [m.message for m in queue.list_view()] == ["c"]


def test_config_selects_tools_and_agent_events_are_never_notified() -> None:
    system = BaseNotificationSystem(NotificationSystemConfig(notified_tools={"Bank": ["add"]}))
    system.initialize(TimeManager(virtual=True))
    system.handle_event(completed("Bank", "add", EventType.ENV, 5))
    system.handle_event(completed("Bank", "add", EventType.AGENT, 6))
    system.handle_event(completed("Bank", "read", EventType.ENV, 7))
    system.handle_event(completed("Other", "add", EventType.ENV, 8))
    (message,) = system.message_queue.get_by_timestamp(to_datetime(100))
    assert message.message_type is MessageType.ENVIRONMENT_NOTIFICATION
    assert message.message == "Bank.add(amount=1)" and message.timestamp == to_datetime(5)
    assert (message.app_name, message.function_name) == ("Bank", "add")
    assert message.event is not None and message.event_id == message.event.event_id


class CabApp(App):
    """An app of ARE's class name: ARE's tables say which of its tools notify, and how."""

    @event_registered(operation_type=OperationType.WRITE, event_type=EventType.ENV)
    def end_ride(self) -> None:
        return None

    @event_registered(operation_type=OperationType.WRITE, event_type=EventType.ENV)
    def update_ride_status(self, status: str) -> None:
        return None


def test_verbosity_levels_notify_ares_tools_in_ares_words() -> None:
    user = completed("AgentUserInterface", "send_message_to_agent", EventType.USER, 1)
    cabs = CabApp()
    ended = Event.from_function(cabs.end_ride).execute(event_time=2)
    updated = Event.from_function(cabs.update_ride_status, status="x").execute(event_time=3)
    other = completed("Bank", "add", EventType.ENV, 4)
    greeting = (
        "Received at: 1970-01-01 00:00:01\nSender: User\nMessage: hello\n"
        "Already read: True\nRead at: 1970-01-01 00:00:01"
    )
    for level, expected in [
        (VerbosityLevel.LOW, [greeting]),
        (VerbosityLevel.MEDIUM, [greeting, "CabApp: ride completed"]),
        (VerbosityLevel.HIGH, [greeting, "CabApp: ride completed", "CabApp: ride status updated"]),
    ]:
        system = VerboseNotificationSystem(level)
        system.initialize(TimeManager(virtual=True))
        for event in (user, ended, updated, other):
            system.handle_event(event)
        messages = system.message_queue.get_by_timestamp(to_datetime(10))
        assert [m.message for m in messages] == expected, level
        assert messages[0].message_type is MessageType.USER_MESSAGE
        assert {m.message_type for m in messages[1:]} <= {MessageType.ENVIRONMENT_NOTIFICATION}
    assert get_notification_tools(VerbosityLevel.MEDIUM)["Cabs"] == [
        "cancel_ride",
        "user_cancel_ride",
        "end_ride",
    ]
    assert get_notification_tools() == {}


def test_tools_are_listed_under_the_app_name_or_its_class_name() -> None:
    by_class = NotificationSystemConfig(notified_tools={"CounterApp": ["add"]})
    system = BaseNotificationSystem(by_class)
    assert system.is_notified(completed("Bank", "add", EventType.ENV, 1))
    assert not system.is_notified(completed("Bank", "read", EventType.ENV, 1))
    user = completed("AgentUserInterface", "send_message_to_agent", EventType.USER, 1)
    assert system.is_notified(user), "a user message is notified whatever the config"
    assert not BaseNotificationSystem().is_notified(completed("Bank", "add", EventType.ENV, 1))


class WithAttachments:
    class AgentUserInterface(App):
        """ARE's user interface's message tool, with its attachments argument."""

        @event_registered(operation_type=OperationType.WRITE, event_type=EventType.USER)
        def send_message_to_agent(
            self, content: str = "", base64_utf8_encoded_attachment_contents: Any = None
        ) -> None:
            return None


def test_a_user_message_carries_its_attachments() -> None:
    aui = WithAttachments.AgentUserInterface()
    picture = Attachment(base64_data=b"aGk=", mime="image/png", name="hi.png")
    dumped = {"base64_data": "Ynll", "mime": "text/plain"}
    event = Event.from_function(
        aui.send_message_to_agent,
        content="see these",
        base64_utf8_encoded_attachment_contents=[picture, dumped],
    ).execute(event_time=1)
    message = BaseNotificationSystem().convert_to_message(event)
    assert message is not None and message.message_type is MessageType.USER_MESSAGE
    assert message.attachments == [picture, Attachment(base64_data=b"Ynll", mime="text/plain")]
    assert message.attachments[1].model_dump() == {**dumped, "name": None}
    other_kind = SimpleNamespace(base64_data=b"aGk=", mime="image/png", name="hi.png")
    assert Attachment.model_validate(other_kind) == picture
    with pytest.raises(ValueError, match="mime"):
        Attachment.model_validate({"base64_data": "aGk=", "mime": ""})
    with pytest.raises(ValueError, match="base64_data"):
        Attachment.model_validate({"base64_data": b"", "mime": "image/png"})


def test_the_environment_notifies_its_stop_once_in_ares_words() -> None:
    system = BaseNotificationSystem()
    system.initialize(TimeManager(virtual=True))
    system.handle_event(StopEvent(event_time=3))
    assert len(system.message_queue) == 0, "a stop event is not itself a message"
    env = Environment(
        EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False),
        notification_system=system,
    )
    env.schedule(StopEvent().delayed(3))
    env.run_until_idle()
    env.stop()
    (message,) = system.message_queue.list_view()
    assert message.message_type is MessageType.ENVIRONMENT_STOP
    assert message.message == "Environment stopped with state EnvironmentState.STOPPED"
    assert (
        message.timestamp == to_datetime(3) and system.message_queue.has_environment_stop_message()
    )
    assert system.get_next_notification_time() == 3
    system.clear()
    assert system.get_next_notification_time() is None


@settings(max_examples=60, deadline=None)
@given(
    dues=st.lists(st.integers(0, 30), max_size=6),
    ticks=st.lists(st.integers(1, 40), min_size=1, max_size=8, unique=True),
)
def test_each_reminder_is_notified_once_at_the_first_tick_it_is_due(
    dues: list[int], ticks: list[int]
) -> None:
    reminders = [Reminder(f"r{i}", due) for i, due in enumerate(dues)]
    app, counter = ReminderApp(reminders), CounterApp()
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False))
    env.register_apps([app, counter])
    env.schedule([Event.from_function(counter.add, amount=1).delayed(t) for t in ticks])
    env.run_until_idle()
    assert [e.function_name() for e in env.event_log] == ["add"] * len(ticks), (
        "asking is not logged"
    )
    notified: dict[str, float] = {}
    for message in env.notification_system.message_queue.list_view():
        head, *lines = message.message.split("\n")
        assert head == "Todo: New due reminders:"
        for line in lines:
            assert line.removeprefix("Reminder: ") not in notified
            notified[line.removeprefix("Reminder: ")] = message.timestamp.timestamp()
    expected = {
        r.title: min(t for t in ticks if t >= r.due) for r in reminders if r.due <= max(ticks)
    }
    assert notified == expected
    assert all(r.time_notified == expected.get(r.title) for r in reminders)


def test_timeout_fires_only_in_a_tick_without_other_notifications() -> None:
    system = BaseNotificationSystem(NotificationSystemConfig(notify_all_env_events=True))
    system.initialize(TimeManager(virtual=True))
    system.set_wait_timeout(5)
    system.handle_timeout_after_events(4)
    assert len(system.message_queue) == 0 and system.next_timeout() == 5
    system.handle_event(completed("Bank", "add", EventType.ENV, 5))
    system.handle_timeout_after_events(5)
    assert system.next_timeout() is None, "a notification in the tick cancels the wait"
    assert [m.message for m in system.message_queue.list_view()] == ["Bank.add(amount=1)"]
    system.set_wait_timeout(9)
    system.handle_timeout_after_events(9)
    last = system.message_queue.list_view()[-1]
    assert last.message == "Wait for notification timed out."
    assert last.timestamp == to_datetime(9) and system.next_timeout() is None
    system.set_wait_timeout(20)
    system.clear_wait_timeout()
    system.handle_timeout_after_events(25)
    assert len(system.message_queue) == 2


def test_timestamps_are_aware_utc() -> None:
    assert to_datetime(0).utcoffset() == timedelta(0)


def test_a_notification_system_with_its_own_time_based_notifications_sees_every_tick() -> None:
    class Ticking(BaseNotificationSystem):
        def __init__(self) -> None:
            super().__init__()
            self.ticks: list[float | None] = []

        def handle_time_based_notifications(self, tick_time: float | None = None) -> None:
            self.ticks.append(tick_time)

    system, counter = Ticking(), CounterApp()
    env = Environment(
        EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False),
        notification_system=system,
    )
    env.register_apps([counter])
    env.schedule([Event.from_function(counter.add, amount=1).delayed(t) for t in (2, 5)])
    env.run_until_idle()
    assert system.ticks == [2, 5]


@pytest.mark.parametrize(
    "override", ["is_notified", "convert_to_message", "instance_is_notified", None]
)
def test_an_agents_call_is_notified_only_by_a_system_with_its_own_rules(
    override: str | None,
) -> None:
    """The base rules never notify an AGENT event (handle_event skips them without asking);
    a subclass with its own is_notified or convert_to_message is asked of every event."""

    class Everything(BaseNotificationSystem):
        pass

    if override == "is_notified":
        Everything.is_notified = lambda self, event: True  # type: ignore[method-assign]
    elif override == "convert_to_message":
        Everything.convert_to_message = lambda self, event: Message(  # type: ignore[method-assign]
            message_type=MessageType.ENVIRONMENT_NOTIFICATION,
            message="seen",
            timestamp=to_datetime(0),
        )

    class Derived(Everything):
        pass

    systems: list[BaseNotificationSystem] = [Everything(), Derived()]
    if override == "instance_is_notified":
        for system in systems:
            system.is_notified = lambda event: True  # type: ignore[method-assign]
    for system in systems:
        counter = CounterApp()
        env = Environment(
            EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False),
            notification_system=system,
        )
        env.register_apps([counter])
        counter.add(amount=1)  # an agent's call: one AGENT event
        [event] = env.event_log.list_view()
        assert event.event_type is EventType.AGENT
        assert len(system.message_queue) == (0 if override is None else 1)


def test_a_system_whose_own_convert_to_message_was_set_on_it_is_shown_queued_events() -> None:
    """The kernel shows a queued event to a system that replaced convert_to_message on
    itself (not in a subclass) as to one of a subclass, rather than logging the event as
    one the config does not notify."""
    system = BaseNotificationSystem()
    system.convert_to_message = lambda event: Message(  # type: ignore[method-assign]
        message_type=MessageType.ENVIRONMENT_NOTIFICATION,
        message="seen",
        timestamp=to_datetime(0),
    )
    counter = CounterApp()
    env = Environment(
        EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False),
        notification_system=system,
    )
    env.register_apps([counter])
    env.schedule(Event.from_function(counter.add, amount=1).delayed(1))
    env.run_until_idle()
    assert [m.message for m in system.message_queue.list_view()] == ["seen"]
