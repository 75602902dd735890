"""ARE's Environment: the step-able core plus ARE's thread driver, at ARE's import path.

:class:`Environment` is :class:`~sotopia_are.simulation.environment_core.EnvironmentCore`
(step it, or run it until a time or until idle, from one thread and with no lock) plus
ARE's thread API: ``start`` runs an event loop in a background thread — queue-based
(jump to the next due time) or time-based (one tick per ``time_increment_in_seconds``,
on the wall clock or a virtual one) — and from then on every method takes a real lock.
``run`` / ``join`` / ``stop`` drive it; ``pause`` / ``resume`` belong to the core.
The configuration and lifecycle names are re-exported here, as ARE has them.
"""

from __future__ import annotations

import logging
import threading

from sotopia_are.simulation.environment_config import (
    EnvironmentConfig,
    EnvironmentState,
    EnvironmentType,
)
from sotopia_are.simulation.environment_core import EnvironmentCore
from sotopia_are.simulation.event_log import EventLog
from sotopia_are.simulation.events import AbstractEvent
from sotopia_are.simulation.notification_system import BaseNotificationSystem
from sotopia_are.simulation.scenarios.scenario import Scenario

__all__ = [
    "Environment",
    "EnvironmentConfig",
    "EnvironmentState",
    "EnvironmentType",
    "EventLog",
    "run_in_oracle_mode",
]

logger = logging.getLogger(__name__)

# Steps the queue loop takes per lock acquisition: fewer acquisitions are cheaper, yet
# agent threads logging their calls get the lock regularly.
_STEPS_PER_LOCK = 64


class _Driver:
    """What the thread driver of an :class:`Environment` synchronises with."""

    __slots__ = ("lock", "stop", "wakeup")

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.wakeup = threading.Condition(self.lock)
        self.stop = threading.Event()


class Environment(EnvironmentCore):
    """Runs events against registered apps on a simulated clock and logs what completed;
    :meth:`start` / :meth:`run` drive it from a background thread."""

    def __init__(
        self,
        config: EnvironmentConfig | None = None,
        environment_type: EnvironmentType = EnvironmentType.UNKNOWN,
        notification_system: BaseNotificationSystem | None = None,
    ) -> None:
        super().__init__(config, environment_type, notification_system)
        # The driver's lock, condition and stop signal: made when first asked for (by
        # start, or by a stop after it), not for every environment (an episode's is
        # stepped from its own task and never started: they were a tenth of making it).
        self._driver: _Driver | None = None
        self._thread: threading.Thread | None = None

    @property
    def _thread_lock(self) -> threading.RLock:
        """The lock the thread driver installs as the core's when it starts."""
        return self._driving().lock

    @property
    def _wakeup(self) -> threading.Condition:
        """The driver's condition, on :attr:`_thread_lock`."""
        return self._driving().wakeup

    @property
    def _stop_signal(self) -> threading.Event:
        """Set once the run must end (the driver's loop and sleeps watch it)."""
        return self._driving().stop

    def _driving(self) -> _Driver:
        driver = self._driver
        if driver is None:
            driver = self._driver = _Driver()
        return driver

    # ------------------------------------------------------------- thread API

    def start(self) -> None:
        """Run the event loop in a background thread and return at once."""
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("the environment was already started")
            if self.state is EnvironmentState.SETUP:
                self._begin()
            elif self.state is not EnvironmentState.RUNNING:
                raise RuntimeError(f"cannot start an environment in state {self.state.value}")
            # Until now one thread owned the core; from here on two do, so every method
            # takes the real lock (the loop thread starts only after it is in place).
            self._lock = self._thread_lock
            self._thread = threading.Thread(
                target=self._run_loop, name="sotopia-are-environment", daemon=True
            )
            self._thread.start()

    def run(
        self, scenario: Scenario, wait_for_end: bool = True, schedule_events: bool = True
    ) -> None:
        """Initialize ``scenario``, register its apps, schedule its events and start;
        with ``wait_for_end``, block until the loop ends."""
        if self.state is not EnvironmentState.SETUP:
            raise RuntimeError(f"run() needs a fresh environment; this one is {self.state.value}")
        scenario.initialize()
        self.register_apps(scenario.apps or [])
        if schedule_events:
            self.schedule(scenario.events)
        self.start()
        if wait_for_end:
            self.join()

    def join(self, timeout: float | None = None) -> None:
        """Block until the event loop thread ends (see EnvironmentConfig for when)."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def stop(self) -> None:
        """Stop the loop (waiting for the thread) and mark the environment STOPPED."""
        with self._lock:
            if self._driver is not None:  # else no loop ever waited on it
                self._driver.stop.set()
            self._wake()
        self.join()
        with self._lock:
            self._finish(EnvironmentState.STOPPED)

    # --------------------------------------------------------------- internals

    def _wake(self) -> None:
        # Before start() no thread waits, and the lock is not the condition's to notify
        # with; after it, callers hold the lock, as notifying requires.
        if self._thread is not None:
            self._wakeup.notify_all()

    def _finish(self, state: EnvironmentState) -> None:
        # Set first: a time-based loop sleeping between ticks wakes up and ends.
        if self._driver is not None:  # else no loop ever waited on it
            self._driver.stop.set()
        super()._finish(state)

    def _run_loop(self) -> None:
        try:
            if self.config.queue_based_loop:
                self._queue_loop()
            else:
                self._time_loop()
        except BaseException as error:
            logger.exception("environment event loop failed")
            with self._lock:
                self.exception = error
                self._finish(EnvironmentState.FAILED)
            return
        with self._lock:
            self._finish(EnvironmentState.STOPPED)

    def _wait_if_paused(self) -> bool:
        """With the lock held: False when the loop must end; waits out a pause."""
        while self.state is EnvironmentState.PAUSED and not self._stop_signal.is_set():
            self._wakeup.wait()
        return self.state is EnvironmentState.RUNNING and not self._stop_signal.is_set()

    def _queue_loop(self) -> None:
        swept: set[AbstractEvent] = set()
        while True:
            with self._wakeup:
                if not self._wait_if_paused():
                    return
                if self.config.exit_when_no_events and self._idle(swept):
                    return
                if self._next_due() is None:
                    # Nothing is left to run: the run is over, as in ARE (whose queue
                    # loop ends once its queue is empty, whatever exit_when_no_events).
                    return
                if not self._step():
                    return  # the next event lies beyond the duration
                # Within this slice only this thread can stop the run, and stopping it
                # leaves RUNNING, which _run_live checks before each step.
                if not self._stop_signal.is_set():
                    self._run_live(_STEPS_PER_LOCK)

    def _time_loop(self) -> None:
        increment = self.config.time_increment_in_seconds
        virtual = self.config.uses_virtual_clock
        swept: set[AbstractEvent] = set()
        while True:
            with self._wakeup:
                if not self._wait_if_paused():
                    return
                now = self.time_manager.time()
                if self.end_time is not None:
                    now = min(now, self.end_time)
                self._tick(now)
                if self.end_time is not None and now >= self.end_time:
                    return
                if self.config.exit_when_no_events and self._idle(swept):
                    return
                if virtual:
                    self.time_manager.add_offset(increment)
                    continue
                # The last tick is at the end of the duration, not up to a tick after it.
                wait = increment if self.end_time is None else min(increment, self.end_time - now)
            if self._stop_signal.wait(wait):
                return


def run_in_oracle_mode(scenario: Scenario) -> Environment:
    """Run ``scenario`` to its end in oracle mode on a virtual clock, with the scenario's
    own start time, duration and tick; return the environment (its log holds the run)."""
    env = Environment(
        EnvironmentConfig(
            start_time=scenario.start_time,
            duration=scenario.duration,
            time_increment_in_seconds=scenario.time_increment_in_seconds,
            oracle_mode=True,
            queue_based_loop=True,
            exit_when_no_events=True,
            verbose=False,
        )
    )
    env.run(scenario)
    return env
