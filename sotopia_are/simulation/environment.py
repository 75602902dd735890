"""The Environment: ARE's simulation lifecycle on a synchronous, step-able core.

The core is :meth:`Environment.step` (run everything due at the next due time) and its
loops :meth:`Environment.run_until` / :meth:`Environment.run_until_idle`; they never start
a thread or read the wall clock in queue-based (virtual-clock) mode. ARE's thread API
(``start``/``pause``/``resume``/``stop``/``join``/``run``) is a thin driver over that core.

Rules the kernel keeps:

* an event runs only after every one of its dependencies has *completed* in this
  environment, at ``last completion time + event_relative_time`` (or at ``event_time``);
* events due at the same time run in ``(time, priority, seq)`` order (see
  :mod:`.event_queue`);
* scheduled events are never mutated, so one scenario can be run by many environments.
"""

from __future__ import annotations

import enum
import json
import logging
import os
import re
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.event_log import EventLog
from sotopia_are.simulation.event_queue import EventQueue
from sotopia_are.simulation.files import write_text_atomically
from sotopia_are.simulation.notification_system import (
    BaseNotificationSystem,
    VerboseNotificationSystem,
)
from sotopia_are.simulation.scenarios.scenario import Scenario
from sotopia_are.simulation.time_manager import TimeManager
from sotopia_are.simulation.types import (
    AbstractEnvironment,
    AbstractEvent,
    Action,
    CompletedEvent,
    CompletedOracleEvent,
    ConditionCheckEvent,
    Event,
    EventMetadata,
    OracleEvent,
    StopEvent,
    ValidationEvent,
)

__all__ = [
    "Environment",
    "EnvironmentConfig",
    "EnvironmentState",
    "EnvironmentType",
    "EventLog",
    "run_in_oracle_mode",
]

logger = logging.getLogger(__name__)


@dataclass
class EnvironmentConfig:
    """How an :class:`Environment` runs (ARE's fields and defaults, plus ``virtual_clock``).

    - start_time: simulated start time in seconds (None means 0).
    - duration: simulated seconds to run (None: until stopped or out of events).
    - time_increment_in_seconds: seconds per tick, >= 1; condition and validation checks
      run once per tick, and the time-based loop advances one tick at a time (its last
      tick is at the end of the duration, even when that comes sooner than a full tick).
    - oracle_mode: run OracleEvents (otherwise they and their dependants never run).
    - dump_dir: in oracle mode, where to write the final state (environment_state.json).
    - exit_when_no_events: stop the loop once no event is left (use without an agent);
      checks without a timeout do not count once each had a final evaluation.
    - queue_based_loop: jump time to the next event instead of ticking.
    - wait_for_user_input_timeout: seconds to wait for user input (for agent runners).
    - verbose: log each tick at INFO level.
    - virtual_clock: never read the wall clock (default: True iff queue_based_loop); a
      virtual time-based loop advances one tick per iteration without sleeping.
    """

    start_time: float | None = 0
    duration: float | None = 60
    time_increment_in_seconds: int = 1
    oracle_mode: bool = False
    dump_dir: str | None = None
    exit_when_no_events: bool = False
    queue_based_loop: bool = False
    wait_for_user_input_timeout: float | None = None
    verbose: bool = True
    virtual_clock: bool | None = None

    def __post_init__(self) -> None:
        def number(value: object) -> bool:
            return isinstance(value, int | float) and not isinstance(value, bool)

        problems: list[str] = []
        increment = self.time_increment_in_seconds
        if not number(increment) or increment < 1:
            problems.append(
                f"time_increment_in_seconds must be a number of seconds >= 1, got {increment!r}"
            )
        if self.start_time is not None and not number(self.start_time):
            problems.append(f"start_time must be seconds or None, got {self.start_time!r}")
        if self.duration is not None and (not number(self.duration) or self.duration < 0):
            problems.append(f"duration must be seconds >= 0 or None, got {self.duration!r}")
        timeout = self.wait_for_user_input_timeout
        if timeout is not None and (not number(timeout) or timeout < 0):
            problems.append(
                f"wait_for_user_input_timeout must be seconds >= 0 or None, got {timeout!r}"
            )
        if problems:
            raise ValueError("invalid EnvironmentConfig: " + "; ".join(problems))

    @property
    def uses_virtual_clock(self) -> bool:
        """Whether the environment's clock is virtual."""
        return self.queue_based_loop if self.virtual_clock is None else self.virtual_clock


class EnvironmentState(enum.Enum):
    """Lifecycle of an environment.

    SETUP: being set up (initial). RUNNING: events are processed and logged. PAUSED:
    nothing is processed until resumed. STOPPED: finished. FAILED: stopped by an error or
    a failed validation (see ``Environment.exception`` / the log).
    """

    SETUP = "SETUP"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"


class EnvironmentType(enum.Enum):
    """Where the environment is driven from (informational)."""

    UNKNOWN = "UNKNOWN"
    CLI = "CLI"
    GUI = "GUI"


_STEPS_PER_LOCK = 64

_PLACEHOLDER = re.compile(r"\{\{\s*([^}.\s]+)((?:\.[^}.\s]+)*)\s*\}\}")


@dataclass
class _CheckState:
    """Per-environment progress of a recurring check (the event itself stays untouched)."""

    first_check: float
    achieved: set[int]


class Environment(AbstractEnvironment):
    """Runs events against registered apps on a simulated clock and logs what completed."""

    def __init__(
        self,
        config: EnvironmentConfig | None = None,
        environment_type: EnvironmentType = EnvironmentType.UNKNOWN,
        notification_system: BaseNotificationSystem | None = None,
    ) -> None:
        self.config = EnvironmentConfig() if config is None else config
        self.environment_type = environment_type
        self.start_time = float(self.config.start_time or 0)
        self.end_time = (
            None if self.config.duration is None else self.start_time + self.config.duration
        )
        self.time_manager = TimeManager(self.start_time, virtual=self.config.uses_virtual_clock)
        self.apps: dict[str, App] = {}
        self.event_queue = EventQueue()
        self._event_log = EventLog()
        self.notification_system = (
            VerboseNotificationSystem() if notification_system is None else notification_system
        )
        self.notification_system.initialize(self.time_manager)
        self.state = EnvironmentState.SETUP
        self.exception: BaseException | None = None
        self._listeners: list[Callable[[CompletedEvent], None]] = []
        self._known: set[AbstractEvent] = set()
        self._completed: set[AbstractEvent] = set()
        self._waiting: dict[AbstractEvent, int] = {}
        self._checks: dict[AbstractEvent, _CheckState] = {}
        self._lock = threading.RLock()
        self._wakeup = threading.Condition(self._lock)
        self._stop_signal = threading.Event()
        self._thread: threading.Thread | None = None
        self._finalized = False

    # ----------------------------------------------------------------- queries

    @property
    def event_log(self) -> EventLog:
        """Every completed event, in completion order (which is time order)."""
        return self._event_log

    @property
    def current_time(self) -> float:
        """The simulated time now."""
        return self.time_manager.time()

    def is_running(self) -> bool:
        """Whether events are being processed (state RUNNING)."""
        return self.state is EnvironmentState.RUNNING

    def get_app(self, app_name: str) -> App:
        """The registered app ``app_name``; KeyError naming the registered apps otherwise."""
        try:
            return self.apps[app_name]
        except KeyError:
            names = ", ".join(self.apps) or "none"
            raise KeyError(f"no app {app_name!r} is registered (registered: {names})") from None

    def get_app_with_class(self, app_class: type[App]) -> App:
        """The first registered app of class ``app_class``."""
        for app in self.apps.values():
            if isinstance(app, app_class):
                return app
        raise KeyError(f"no app of class {app_class.__name__} is registered")

    def get_state(self) -> dict[str, Any]:
        """A JSON-ready snapshot: state, time, app states and the event log."""
        with self._lock:
            return {
                "state": self.state.value,
                "time": self.current_time,
                "apps": {name: app.get_state() for name, app in self.apps.items()},
                "event_log": self._event_log.to_dict(),
            }

    # ------------------------------------------------------------------- setup

    def register_apps(self, apps: Sequence[App]) -> None:
        """Host ``apps``: their agent calls are logged here, stamped with this clock."""
        with self._lock:
            for app in apps:
                known = self.apps.get(app.name)
                if known is not None and known is not app:
                    raise ValueError(f"another app is already registered as {app.name!r}")
                self.apps[app.name] = app
                app.register_to_env("environment", self.add_to_log)
                app.register_time_manager(self.time_manager)

    def add_completed_event_listener(self, listener: Callable[[CompletedEvent], None]) -> None:
        """Call ``listener`` with each completed event, right after it is logged."""
        with self._lock:
            self._listeners.append(listener)

    def remove_completed_event_listener(self, listener: Callable[[CompletedEvent], None]) -> None:
        """Stop calling ``listener``."""
        with self._lock:
            self._listeners.remove(listener)

    def schedule(self, events: AbstractEvent | Sequence[AbstractEvent]) -> None:
        """Queue ``events``; each runs once all its dependencies completed here.

        An event already known to this environment is ignored. Successors of completed
        events are scheduled automatically. Outside oracle mode, OracleEvents are
        dropped (so their dependants never run).
        """
        with self._wakeup:
            for event in [events] if isinstance(events, AbstractEvent) else events:
                self._register(event, self._schedule_base_time())
            self._wakeup.notify_all()

    def add_to_log(self, events: CompletedEvent | Sequence[CompletedEvent]) -> None:
        """Log completed events made outside the queue (agent calls to registered apps)."""
        with self._lock:
            for event in [events] if isinstance(events, CompletedEvent) else events:
                self._record(event)

    def resolve_arg_placeholders(self, event: Event) -> Event:
        """``event`` with ``{{event_id}}`` / ``{{event_id.key.sub}}`` args replaced by the
        return values of past events (a copy; ``event`` itself is returned unchanged if it
        has none). A whole-string placeholder keeps the value's type; embedded ones are
        formatted into the string. KeyError if a referenced event has not completed."""
        action = event.action
        if action is None or not _has_placeholder(action.args):
            return event
        resolved = {name: self._resolve_value(value) for name, value in action.args.items()}
        return Event(
            event_type=event.event_type,
            event_time=event.event_time,
            event_relative_time=event.event_relative_time,
            event_id=event.event_id,
            dependencies=event.dependencies,
            action=Action(
                function=action.function,
                args=action.args,
                resolved_args=resolved,
                app=action.app,
                action_id=action.action_id,
                operation_type=action.operation_type,
                tool_metadata=action.tool_metadata,
            ),
        )

    # --------------------------------------------------------------- step API

    def next_event_time(self) -> float | None:
        """When something is next due: a queued event or a notification timeout."""
        with self._lock:
            due = self.event_queue.peek_time()
            timeout = self.notification_system.next_timeout()
            if timeout is None:
                return due
            return timeout if due is None else min(due, timeout)

    def step(self) -> bool:
        """Move the clock to the next due time and run everything due then.

        Returns False, doing nothing, if nothing is due within the duration, or the
        environment is paused, stopped or failed. Starts a SETUP environment.
        """
        with self._lock:
            if self.state is not EnvironmentState.RUNNING:
                if self.state is not EnvironmentState.SETUP:
                    return False
                self._begin()
            due = self.event_queue.peek_time()
            timeout = self.notification_system.next_timeout()
            if timeout is not None and (due is None or timeout < due):
                due = timeout
            if due is None or (self.end_time is not None and due > self.end_time):
                return False
            now = self.time_manager.time()
            if due > now:
                self.time_manager.add_offset(due - now)
                now = due
            self._tick(now)
            return True

    def run_until(self, until: float) -> None:
        """Step through every time <= ``until``; a virtual clock then stands at ``until``
        (capped at the end of the duration)."""
        with self._lock:
            if self.state is EnvironmentState.SETUP:
                self._begin()
            while (due := self.next_event_time()) is not None and due <= until and self.step():
                pass
            if self.end_time is not None:
                until = min(until, self.end_time)
            running = self.state is EnvironmentState.RUNNING
            if running and self.config.uses_virtual_clock and until > self.time_manager.time():
                self.time_manager.set_time(until)

    def run_until_idle(self) -> None:
        """Step until the run is idle, the duration is reached, or the environment stops.

        Idle: only polling checks (no timeout) are queued, and each of them has been
        evaluated once more since, so a condition made true by the last event is seen.
        """
        swept: set[AbstractEvent] = set()
        with self._lock:
            while not self._idle(swept) and self.step():
                pass

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

    def pause(self) -> None:
        """Stop processing events (and freeze a real clock) until :meth:`resume`."""
        with self._wakeup:
            if self.state is EnvironmentState.RUNNING:
                self.state = EnvironmentState.PAUSED
                self.time_manager.pause()

    def resume(self) -> None:
        """Continue after :meth:`pause`."""
        with self._wakeup:
            if self.state is EnvironmentState.PAUSED:
                self.time_manager.resume()
                self.state = EnvironmentState.RUNNING
                self._wakeup.notify_all()

    def resume_with_offset(self, offset: float) -> None:
        """Jump the clock by ``offset`` seconds, then :meth:`resume`."""
        with self._lock:
            self.time_manager.add_offset(offset)
            self.resume()

    def stop(self) -> None:
        """Stop the loop (waiting for the thread) and mark the environment STOPPED."""
        with self._wakeup:
            self._stop_signal.set()
            self._wakeup.notify_all()
        self.join()
        with self._lock:
            self._finish(EnvironmentState.STOPPED)

    # --------------------------------------------------------------- internals

    def _begin(self) -> None:
        self.time_manager.reset(self.start_time)
        self.state = EnvironmentState.RUNNING

    def _schedule_base_time(self) -> float:
        # Events scheduled during setup are relative to the start, not to setup wall time.
        if self.state is EnvironmentState.SETUP:
            return self.start_time
        return self.time_manager.time()

    def _idle(self, swept: set[AbstractEvent]) -> bool:
        """True once nothing but polling checks is queued and each of them was evaluated
        once more since then (with nothing else acting, a check that fails then would
        fail forever). ``swept`` carries the checks evaluated so far between calls."""
        if self._has_live_work():
            swept.clear()
            return False
        upcoming = self.event_queue.peek()
        if upcoming is None or upcoming[1] in swept:
            return True
        swept.add(upcoming[1])
        return False

    def _has_live_work(self) -> bool:
        return (
            self.event_queue.has_live_events()
            or self.notification_system.next_timeout() is not None
        )

    def _register(self, event: AbstractEvent, now: float) -> None:
        if event in self._known:
            return
        if isinstance(event, OracleEvent) and not self.config.oracle_mode:
            return
        self._known.add(event)
        completed = self._completed
        pending = sum(1 for parent in event.dependencies if parent not in completed)
        if pending:
            self._waiting[event] = pending
        else:
            self._enqueue(event, now)

    def _enqueue(self, event: AbstractEvent, now: float) -> None:
        if event.event_time is not None:
            due = max(event.event_time, now)
        else:
            due = now + (event.event_relative_time or 0)
        polls_forever = (
            isinstance(event, ConditionCheckEvent | ValidationEvent) and event.timeout is None
        )
        self.event_queue.put(event, due, not polls_forever)

    def _complete(self, event: AbstractEvent, now: float) -> None:
        self._completed.add(event)
        waiting = self._waiting
        for child in event.successors:
            if child not in self._known:
                self._register(child, now)
                continue
            pending = waiting.get(child)
            if pending is None:
                continue
            if pending == 1:
                del waiting[child]
                self._enqueue(child, now)
            else:
                waiting[child] = pending - 1

    def _record(self, completed: CompletedEvent) -> None:
        self._event_log.put(completed)
        self.notification_system.handle_event(completed)
        for listener in self._listeners:
            listener(completed)

    def _tick(self, now: float) -> None:
        """Run every queued event due at or before ``now``, then close the tick."""
        if self.config.verbose:
            logger.info("tick at %s", now)
        pop_due = self.event_queue.pop_due
        try:
            while self.state is EnvironmentState.RUNNING:
                event = pop_due(now)
                if event is None:
                    break
                self._process(event, now)
            self.notification_system.handle_timeout_after_events(now)
        except BaseException as error:
            self.exception = error
            self._finish(EnvironmentState.FAILED)
            raise

    def _process(self, event: AbstractEvent, now: float) -> None:
        if isinstance(event, Event):
            action = event.action
            to_run = event
            if action is not None and _has_placeholder(action.args):
                to_run = self.resolve_arg_placeholders(event)
            self._record(to_run.execute(event_time=now))
            self._complete(event, now)
        elif isinstance(event, OracleEvent):
            self._process_oracle(event, now)
        elif isinstance(event, ConditionCheckEvent):
            self._process_condition(event, now)
        elif isinstance(event, ValidationEvent):
            self._process_validation(event, now)
        elif isinstance(event, StopEvent):
            self._record_own(event, now, EventMetadata())
            self._complete(event, now)
            self._finish(EnvironmentState.STOPPED)
        else:
            raise TypeError(f"cannot process an event of type {type(event).__name__}")

    def _process_oracle(self, oracle: OracleEvent, now: float) -> None:
        if oracle.make_event is None:
            raise ValueError(f"oracle event {oracle.event_id} has no make_event")
        made = oracle.make_event(self)
        if not isinstance(made, Event):
            raise TypeError(f"oracle event {oracle.event_id} made a {type(made).__name__}")
        completed = self.resolve_arg_placeholders(made).execute(event_time=now)
        self._record(CompletedOracleEvent.from_completed_event_and_oracle_event(completed, oracle))
        self._complete(oracle, now)

    def _record_own(
        self,
        event: ConditionCheckEvent | ValidationEvent | StopEvent,
        now: float,
        metadata: EventMetadata,
    ) -> None:
        """Log an event the kernel runs itself (no app call): a check, or a stop."""
        self._record(
            CompletedEvent(
                event_type=event.event_type,
                event_time=now,
                event_id=event.event_id,
                dependencies=list(event.dependencies),
                event_relative_time=event.event_relative_time,
                action=event.action if isinstance(event, ConditionCheckEvent) else None,
                metadata=metadata,
            )
        )

    def _recheck(self, event: ConditionCheckEvent | ValidationEvent, now: float) -> bool:
        """Queue the next check; False (and forget the check) once past its timeout."""
        state = self._checks[event]
        increment = self.config.time_increment_in_seconds
        next_check = now + event.schedule_every_ticks * increment
        if event.timeout is not None and next_check - state.first_check > event.timeout * increment:
            del self._checks[event]
            return False
        self.event_queue.put(event, next_check, event.timeout is not None)
        return True

    def _process_condition(self, event: ConditionCheckEvent, now: float) -> None:
        if event.action is None:
            raise ValueError(f"condition check {event.event_id} has no condition")
        self._checks.setdefault(event, _CheckState(now, set()))
        try:
            holds = event.action.execute(self)
        except Exception as error:
            # A broken predicate never holds: record why, and release no dependant.
            self._record_own(event, now, _failure(error))
            del self._checks[event]
            return
        if holds:
            del self._checks[event]
            self._record_own(event, now, EventMetadata(return_value=True))
            self._complete(event, now)
        else:
            self._recheck(event, now)

    def _process_validation(self, event: ValidationEvent, now: float) -> None:
        state = self._checks.setdefault(event, _CheckState(now, set()))
        try:
            result = event.validate(self, state.achieved)
        except Exception as error:
            self._record_own(event, now, _failure(error))
            self._finish(EnvironmentState.FAILED)
            return
        if result.success:
            del self._checks[event]
            self._record_own(event, now, EventMetadata(return_value=result))
            self._complete(event, now)
        elif result.triggered_minefields or not self._recheck(event, now):
            self._checks.pop(event, None)
            self._record_own(event, now, EventMetadata(return_value=result))
            self._finish(EnvironmentState.FAILED)

    def _resolve_value(self, value: Any) -> Any:
        if not isinstance(value, str) or "{{" not in value:
            return value
        whole = _PLACEHOLDER.fullmatch(value)
        if whole is not None:
            return self._lookup(whole.group(1), whole.group(2))
        return _PLACEHOLDER.sub(lambda m: str(self._lookup(m.group(1), m.group(2))), value)

    def _lookup(self, event_id: str, path: str) -> Any:
        completed = self._event_log.get(event_id)
        if completed is None:
            raise KeyError(f"placeholder refers to event {event_id!r}, which has not completed")
        value = completed.metadata.return_value
        for key in filter(None, path.split(".")):
            value = value[key] if isinstance(value, dict) else getattr(value, key)
        return value

    def _finish(self, state: EnvironmentState) -> None:
        """Enter a final state once (FAILED wins over STOPPED) and dump in oracle mode."""
        if self.state is not EnvironmentState.FAILED:
            self.state = state
        self._stop_signal.set()
        self._wakeup.notify_all()
        if self._finalized:
            return
        self._finalized = True
        if self.config.oracle_mode and self.config.dump_dir is not None:
            # Serialised first and renamed into place: a failure or crash while dumping
            # leaves any earlier dump whole rather than a half-written file.
            write_text_atomically(
                os.path.join(self.config.dump_dir, "environment_state.json"),
                json.dumps(self.get_state(), indent=2, default=repr),
            )

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
                if self.next_event_time() is None:
                    self._wakeup.wait()  # until something is scheduled, or stop/pause
                    continue
                if not self.step():
                    return  # the next event lies beyond the duration
                # More steps under the same lock acquisition: cheaper, yet bounded so
                # agent threads logging their calls get the lock regularly.
                for _ in range(_STEPS_PER_LOCK):
                    if self._stop_signal.is_set() or not (self._has_live_work() and self.step()):
                        break

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


def _has_placeholder(args: dict[str, Any]) -> bool:
    # A plain loop: this runs once per event, and a generator costs more than the check.
    for value in args.values():  # noqa: SIM110
        if type(value) is str and "{{" in value:
            return True
    return False


def _failure(error: BaseException) -> EventMetadata:
    return EventMetadata(
        exception=f"{type(error).__name__}: {error}",
        exception_stack_trace="".join(traceback.format_exception(error)),
    )
