"""The code samples of the ARE Environment docs (seeds/004), run with ``sotopia_are.``.

They run on ARE's thread API and the real clock, as written, with durations and sleeps
shortened to fractions of a second so the suite stays fast. Wall-clock bounds are only
lower bounds or generous (:data:`SLACK`): timings belong in ``benchmarks/``.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from datetime import timezone

import pytest

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.environment import Environment, EnvironmentConfig, EnvironmentState
from sotopia_are.simulation.types import Event, EventType, event_registered

SHORT = 0.5  # seconds; the docs use 60 and 3600
PAUSE = 0.1  # seconds; the docs sleep 2 to 10
SLACK = 30  # seconds; a busy CI machine may stall a thread for a while


@pytest.fixture
def envs() -> Iterator[list[Environment]]:
    """Environments a test starts; all are stopped afterwards."""
    started: list[Environment] = []
    yield started
    for env in started:
        env.stop()


def test_create_and_start(envs: list[Environment]) -> None:
    # Create configuration
    config = EnvironmentConfig(
        start_time=0,  # Start at time 0 (or use datetime.now().timestamp())
        duration=SHORT,  # Run for SHORT seconds
        time_increment_in_seconds=1,  # 1-second time steps
    )
    # Create and start environment
    env = Environment(config=config)
    envs.append(env)
    env.start()  # Non-blocking, starts event loop in separate thread
    assert env.is_running()  # start() returned while the run goes on
    env.join()
    assert env.state is EnvironmentState.STOPPED
    assert env.time_manager.time() >= SHORT


def test_absolute_start_time_and_half_second_increment() -> None:
    """The docs' second sample uses 0.5 s ticks, which the documented contract forbids
    (time_increment_in_seconds must be >= 1); it fails with an error naming the field."""
    with pytest.raises(ValueError, match=r"time_increment_in_seconds must be .* >= 1, got 0.5"):
        EnvironmentConfig(
            # Absolute start time - use datetime for specific times
            start_time=datetime.datetime(2024, 1, 1, 9, 0, 0).timestamp(),
            # Duration in seconds (None = run until main thread exits)
            duration=3600,  # 1 hour simulation
            # Time increment between ticks
            time_increment_in_seconds=0.5,  # type: ignore[arg-type]
        )
    config = EnvironmentConfig(
        start_time=datetime.datetime(2024, 1, 1, 9, 0, 0).timestamp(),
        duration=3600,
        time_increment_in_seconds=1,
    )
    assert abs(Environment(config).time_manager.time() - config.start_time) < SLACK


def test_pause_and_resume(envs: list[Environment]) -> None:
    config = EnvironmentConfig(start_time=0, duration=SHORT)
    env = Environment(config=config)
    envs.append(env)
    # Start the simulation (non-blocking)
    env.start()
    # Simulation is now running in background
    # Main thread can continue with other work
    time.sleep(PAUSE)
    # Pause simulation
    env.pause()
    assert env.state is EnvironmentState.PAUSED
    frozen = env.time_manager.time()
    # Do other work while paused
    time.sleep(PAUSE)
    assert env.time_manager.time() == frozen
    # Resume simulation
    env.resume()
    assert env.is_running()
    # Keep main thread alive until simulation completes
    time.sleep(config.duration)  # type: ignore[arg-type]
    env.join(timeout=SLACK)
    assert env.state is EnvironmentState.STOPPED


class EmailClientApp(App):
    @event_registered()
    def list_emails(self) -> list[str]:
        return []


class CalendarApp(App):
    pass


def test_register_and_get_apps() -> None:
    env = Environment(EnvironmentConfig())
    # Create apps
    email_app = EmailClientApp()
    calendar_app = CalendarApp()
    # Register apps with environment
    env.register_apps([email_app, calendar_app])
    # Get registered app by name
    email_app = env.get_app("EmailClientApp")
    assert isinstance(email_app, EmailClientApp)
    assert env.get_app("CalendarApp") is calendar_app


def test_query_state(envs: list[Environment]) -> None:
    config = EnvironmentConfig(start_time=0, duration=SHORT)
    env = Environment(config)
    envs.append(env)
    env.start()
    # Get current simulation time
    current_time = env.time_manager.time()
    # Check if simulation is running
    running = False
    if env.is_running():
        running = True
    # Get simulation duration
    total_duration = env.config.duration
    # Get elapsed time
    elapsed = env.time_manager.time_passed()
    assert running and total_duration == SHORT
    # Read in this order from a clock started at 0 with no offset.
    assert 0 <= current_time <= elapsed < SLACK


def test_background_thread_with_events(envs: list[Environment]) -> None:
    """The thread sample, plus an event the loop must run while the main thread waits."""
    config = EnvironmentConfig(start_time=0, duration=SHORT)
    app = EmailClientApp()
    env = Environment(config)
    envs.append(env)
    env.register_apps([app])
    env.schedule(Event.from_function(app.list_emails).delayed(SHORT / 2))
    env.start()  # Returns immediately, event loop runs in background
    # You can do other stuff while event loop is running e.g. do nothing for a few seconds
    time.sleep(PAUSE)
    # You can also pause the simulation here for a moment
    env.pause()
    time.sleep(PAUSE)
    # And then resume it
    env.resume()
    env.join()
    (completed,) = env.event_log
    assert completed.event_type is EventType.ENV and completed.event_time is not None
    assert SHORT / 2 <= completed.event_time <= SHORT


def test_time_manager_sample() -> None:
    from sotopia_are.simulation.time_manager import TimeManager

    # Create time manager
    time_manager = TimeManager()
    # Get current simulation time
    current_time = time_manager.time()
    # Get time passed since start
    elapsed = time_manager.time_passed()
    # Pause simulation time
    time_manager.pause()
    # Resume simulation time
    time_manager.resume()
    # Reset time with custom start time
    time_manager.reset(time.time())
    # Add time offset (e.g., for time jumps)
    time_manager.add_offset(3600)  # Jump forward 1 hour
    assert abs(current_time - time.time()) < SLACK and 0 <= elapsed < SLACK
    assert abs(time_manager.time() - (time.time() + 3600)) < SLACK


def test_notification_system_sample() -> None:
    from sotopia_are.simulation.notification_system import (
        BaseNotificationSystem,
        NotificationSystemConfig,
        VerboseNotificationSystem,
        VerbosityLevel,
    )

    class SendEmailApp(App):
        @event_registered(event_type=EventType.ENV)
        def send_email(self, subject: str) -> str:
            return subject

    app = SendEmailApp("EmailClientApp")
    some_event = Event.from_function(app.send_email, subject="hello").execute(
        event_time=time.time() - 1
    )

    # Create a notification system with specific verbosity
    notification_system = VerboseNotificationSystem(verbosity_level=VerbosityLevel.MEDIUM)
    # Or create with custom configuration
    config = NotificationSystemConfig(
        notified_tools={
            "EmailClientApp": ["send_email", "receive_email"],
            "CalendarApp": ["add_event", "delete_event"],
        }
    )
    base_notification_system = BaseNotificationSystem(config)
    # Initialize with time manager
    from sotopia_are.simulation.time_manager import TimeManager

    time_manager = TimeManager()
    notification_system.initialize(time_manager)
    # Handle events
    notification_system.handle_event(some_event)
    # Get messages for current time
    current_time = datetime.datetime.now(timezone.utc)  # noqa: UP017 - as in the docs
    messages = notification_system.message_queue.get_by_timestamp(current_time)
    assert messages == [], "MEDIUM verbosity does not notify EmailClientApp.send_email"

    base_notification_system.initialize(time_manager)
    base_notification_system.handle_event(some_event)
    (message,) = base_notification_system.message_queue.get_by_timestamp(current_time)
    assert message.function_name == "send_email" and "hello" in message.message
