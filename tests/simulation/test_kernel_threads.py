"""The thread driver: start/stop/join/pause/resume, run(), loops and failures."""

from __future__ import annotations

import threading
import time

import pytest
from _kernel_apps import CounterApp

from sotopia_are.simulation.environment import (
    Environment,
    EnvironmentConfig,
    EnvironmentState,
)
from sotopia_are.simulation.scenarios.scenario import Scenario
from sotopia_are.simulation.types import (
    CompletedEvent,
    ConditionCheckEvent,
    Event,
    EventType,
)


def counter_scenario(*delays: float) -> tuple[Scenario, CounterApp]:
    app = CounterApp()
    events = [Event.from_function(app.add, amount=1).delayed(d) for d in delays]
    return Scenario(scenario_id="threads", apps=[app], events=list(events)), app


def test_queue_loop_exits_when_no_events_are_left() -> None:
    scenario, app = counter_scenario(10, 3600, 86400)
    env = Environment(
        EnvironmentConfig(queue_based_loop=True, exit_when_no_events=True, duration=None)
    )
    env.run(scenario)
    assert app.total == 3 and env.state is EnvironmentState.STOPPED
    assert [e.event_time for e in env.event_log] == [10, 3600, 86400]


def test_queue_loop_stops_once_nothing_is_left_to_run() -> None:
    """A queue-based run in oracle mode whose queue empties after a condition fired
    used to wait forever; ARE's loop (and ours) ends when its queue is empty."""
    app = CounterApp()
    env = Environment(EnvironmentConfig(queue_based_loop=True, oracle_mode=True, duration=10))
    env.register_apps([app])
    check = ConditionCheckEvent.from_condition(lambda e: e.current_time >= 5).with_id("c1")
    after = Event.from_function(app.add, amount=1).with_id("ec1").depends_on(check, 3)
    env.schedule([check, after])
    env.start()
    env.join(timeout=5)
    assert env.state is EnvironmentState.STOPPED, "join() returned only by its timeout"
    assert [(e.event_id, e.event_time) for e in env.event_log] == [
        *[(f"c1-CHECK_{t}", t) for t in range(6)],
        ("ec1", 8),
    ]


def test_queue_loop_ends_at_the_duration() -> None:
    scenario, app = counter_scenario(1, 2, 50)
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=10))
    env.run(scenario)
    assert app.total == 2 and env.state is EnvironmentState.STOPPED


def test_virtual_time_based_loop_ticks_without_sleeping() -> None:
    scenario, _ = counter_scenario(2.5, 7)
    config = EnvironmentConfig(duration=3600, virtual_clock=True, time_increment_in_seconds=2)
    env = Environment(config)
    started = time.monotonic()
    env.run(scenario)
    # 1,800 sleeping ticks would take an hour; the bound only needs to tell the two apart.
    assert time.monotonic() - started < 60
    # Ticks at 0, 2, 4, …: an event runs at the first tick at or after its time and is
    # logged at the time it was due, as ARE logs the scheduled time.
    assert [e.event_time for e in env.event_log] == [2.5, 7]
    assert env.current_time == 3600


def test_real_time_based_loop_ends_at_the_duration_not_a_tick_later() -> None:
    scenario, app = counter_scenario(0.1)
    env = Environment(EnvironmentConfig(duration=0.2, time_increment_in_seconds=5))
    started = time.monotonic()
    env.run(scenario)
    # Waiting out the whole 5 s tick would take at least 5 s; the last tick is at 0.2 s.
    assert time.monotonic() - started < 4
    assert app.total == 1 and 0.1 <= (env.event_log[0].event_time or 0) <= 0.2
    assert env.state is EnvironmentState.STOPPED


def test_agent_calls_from_another_thread_are_logged_while_the_loop_runs() -> None:
    app = CounterApp()
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None))
    env.register_apps([app])
    env.schedule([Event.from_function(app.read).delayed(d) for d in range(200)])
    env.start()
    workers = [threading.Thread(target=lambda: [app.add(1) for _ in range(50)]) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    env.stop()
    agent = [e for e in env.event_log if e.event_type is EventType.AGENT]
    assert len(agent) == 100 and app.total == 100


def test_pause_blocks_processing_until_resume() -> None:
    app = CounterApp()
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None))
    env.register_apps([app])
    # Paused from inside the run (as ARE's user interface pauses for input), so the
    # loop cannot finish before the pause.
    env.schedule(
        [
            Event.from_function(env.pause).with_id("pause").delayed(1),
            Event.from_function(app.add, amount=1).delayed(2),
        ]
    )
    env.start()
    time.sleep(0.1)
    assert len(env.event_log) == 1 and env.state is EnvironmentState.PAUSED
    env.resume()
    env.join(timeout=5)
    assert app.total == 1 and env.state is EnvironmentState.STOPPED


def test_run_and_start_refuse_to_run_twice() -> None:
    scenario, _ = counter_scenario(1)
    env = Environment(EnvironmentConfig(queue_based_loop=True, exit_when_no_events=True))
    env.run(scenario)
    with pytest.raises(RuntimeError, match="fresh environment"):
        env.run(scenario)
    with pytest.raises(RuntimeError, match="already started"):
        env.start()


def test_a_failing_listener_fails_the_environment() -> None:
    scenario, _ = counter_scenario(1, 2)
    env = Environment(EnvironmentConfig(queue_based_loop=True, exit_when_no_events=True))

    def broken(event: CompletedEvent) -> None:
        raise OSError("sink is down")

    env.add_completed_event_listener(broken)
    env.run(scenario)
    assert env.state is EnvironmentState.FAILED
    assert isinstance(env.exception, OSError) and len(env.event_log) == 1


def test_condition_made_true_by_the_last_event_is_seen_before_exiting() -> None:
    app = CounterApp()
    check = ConditionCheckEvent.from_condition(lambda env: app.total == 1)
    after = Event.from_function(app.add, amount=10).depends_on(check, 1)
    first = Event.from_function(app.add, amount=1).delayed(4)
    scenario = Scenario(scenario_id="sweep", apps=[app], events=[check, after, first])
    env = Environment(EnvironmentConfig(queue_based_loop=True, exit_when_no_events=True))
    env.run(scenario)
    actions = [e for e in env.event_log if e.event_type is not EventType.CONDITION]
    assert app.total == 11 and [e.event_time for e in actions] == [4, 5]
    assert env.event_log[-2].event_id.endswith("CHECK_4") and env.event_log[-2].event_time == 4


def test_config_validation_names_the_field() -> None:
    with pytest.raises(ValueError, match="time_increment_in_seconds"):
        EnvironmentConfig(time_increment_in_seconds=0)
    with pytest.raises(ValueError, match="duration must be seconds >= 0"):
        EnvironmentConfig(duration=-1)
    with pytest.raises(ValueError, match="start_time"):
        EnvironmentConfig(start_time="noon")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="wait_for_user_input_timeout"):
        EnvironmentConfig(wait_for_user_input_timeout=-2)
    assert EnvironmentConfig(queue_based_loop=True).uses_virtual_clock
    assert not EnvironmentConfig().uses_virtual_clock


def test_the_core_takes_no_lock_until_a_thread_driver_starts() -> None:
    scenario, app = counter_scenario(1, 2, 3)
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False))
    # Another thread holds the lock the thread driver would use: a core stepped from one
    # thread must not wait for it.
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with env._wakeup:
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)

    def drive() -> None:
        scenario.initialize()
        env.register_apps(scenario.apps or [])
        env.schedule(scenario.events)
        env.run_until_idle()
        app.add(1)  # an agent's call, logged through the core

    driver = threading.Thread(target=drive)
    driver.start()
    driver.join(5)  # well before the holder lets go
    finished = not driver.is_alive()
    release.set()
    holder.join()
    driver.join()
    assert finished and app.total == 4 and len(env.event_log) == 4


def test_once_started_every_call_waits_for_the_drivers_lock() -> None:
    app = CounterApp()
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False))
    env.register_apps([app])
    env.start()
    with env._wakeup:  # the driver's lock: while it is held here, nothing else runs
        logger = threading.Thread(target=lambda: app.add(1))
        logger.start()
        logger.join(0.2)
        assert logger.is_alive() and len(env.event_log) == 0
    logger.join()
    env.stop()
    assert [e.event_type for e in env.event_log] == [EventType.AGENT]
