"""TimeManager (real and virtual) and the notification system."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from _kernel_apps import AgentUserInterface, CounterApp

from sotopia_are.simulation.notification_system import (
    BaseNotificationSystem,
    Message,
    MessageQueue,
    MessageType,
    NotificationSystemConfig,
    VerboseNotificationSystem,
    VerbosityLevel,
    to_datetime,
)
from sotopia_are.simulation.time_manager import TimeManager
from sotopia_are.simulation.types import CompletedEvent, Event, EventType, StopEvent


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


def test_verbosity_levels() -> None:
    user = completed("AgentUserInterface", "send_message_to_agent", EventType.USER, 1)
    env_event = completed("Bank", "add", EventType.ENV, 2)
    for level, expected in [
        (VerbosityLevel.LOW, ["hello"]),
        (VerbosityLevel.MEDIUM, ["hello"]),
        (VerbosityLevel.HIGH, ["hello", "Bank.add(amount=1)"]),
    ]:
        system = VerboseNotificationSystem(level)
        system.initialize(TimeManager(virtual=True))
        system.handle_event(user)
        system.handle_event(env_event)
        messages = system.message_queue.get_by_timestamp(to_datetime(10))
        assert [m.message for m in messages] == expected, level
        assert messages[0].message_type is MessageType.USER_MESSAGE


def test_stop_events_are_notified() -> None:
    system = BaseNotificationSystem()
    system.initialize(TimeManager(virtual=True))
    system.handle_event(StopEvent(event_time=3))
    (message,) = system.message_queue.get_by_timestamp(to_datetime(3))
    assert message.message_type is MessageType.ENVIRONMENT_STOP


def test_timeout_fires_only_in_a_tick_without_other_notifications() -> None:
    system = VerboseNotificationSystem(VerbosityLevel.HIGH)
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
