"""The step-able core of an environment: events run against apps on a simulated clock.

The core is :meth:`EnvironmentCore.step` (run everything due at the next due time) and
its loops :meth:`~EnvironmentCore.run_until` / :meth:`~EnvironmentCore.run_until_idle`;
they never start a thread or read the wall clock on a virtual clock. ARE's thread API is a
driver over it (:class:`sotopia_are.simulation.environment.Environment`). How each kind
of event runs is :mod:`.event_runners`.

Rules the core keeps:

* an event runs only after every one of its dependencies has *completed* in this
  environment, at ``last completion time + event_relative_time`` (or at ``event_time``);
* events due at the same time run in ``(time, priority, seq)`` order (see
  :mod:`.event_queue`);
* scheduled events are never mutated, so one scenario can be run by many environments;
* no lock is taken until a thread driver starts: one thread driving the core pays nothing
  for the threads it does not use.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, cast

from sotopia_are.simulation.actions import AbstractEnvironment
from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.checks import CHECK_KINDS, Checks
from sotopia_are.simulation.environment_config import (
    EnvironmentConfig,
    EnvironmentState,
    EnvironmentType,
)
from sotopia_are.simulation.environment_queries import EnvironmentQueries
from sotopia_are.simulation.event_log import EventLog
from sotopia_are.simulation.event_queue import EventQueue
from sotopia_are.simulation.event_runners import RUNNERS, EventRunners, runner_for
from sotopia_are.simulation.events import (
    AbstractEvent,
    CompletedEvent,
    Event,
    OracleEvent,
)
from sotopia_are.simulation.notification_system import (
    BaseNotificationSystem,
    Message,
    MessageType,
    NotificationSystem,
    ReminderSource,
    to_datetime,
    uses_base_rules,
)
from sotopia_are.simulation.oracle import dump_state
from sotopia_are.simulation.placeholders import (
    resolve_arg_placeholders,
    resolve_in_place,
)
from sotopia_are.simulation.time_manager import TimeManager

__all__ = ["EnvironmentCore"]

logger = logging.getLogger(__name__)

# Read once per step and once per event: a module global is a cheaper lookup than the
# enum's attribute.
_RUNNING = EnvironmentState.RUNNING


class _NoLock:
    """The lock of a core no thread driver runs: taking it costs less than taking an
    uncontended ``threading.RLock``, which is the point."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None


_NO_LOCK = _NoLock()


class EnvironmentCore(EnvironmentQueries, EventRunners, AbstractEnvironment):
    """Runs events against registered apps on a simulated clock and logs what completed.

    Without a driver it is a plain object for one thread (or one asyncio loop) and takes
    no lock; a thread driver installs a real one in ``_lock`` before its thread starts
    (and overrides ``_wake``), and from then on every public method may be called from
    any thread.
    """

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
            NotificationSystem() if notification_system is None else notification_system
        )
        self.notification_system.initialize(self.time_manager)
        # Whether each tick must be opened on the notification system even without a
        # reminder app: only when a subclass has its own time-based notifications. Else
        # a tick without a reminder app skips the call (it runs once per event).
        kind = type(self.notification_system)
        self._opens_every_tick = (
            kind.handle_time_based_notifications
            is not BaseNotificationSystem.handle_time_based_notifications
        )
        # Whether ticks close by the base rules (next_timeout and
        # handle_timeout_after_events not replaced): then the queue loop reads the pending
        # wait and the notified flag itself and closes a tick only when either is set.
        system = self.notification_system
        self._closes_by_base = (
            kind.next_timeout is BaseNotificationSystem.next_timeout
            and kind.handle_timeout_after_events
            is BaseNotificationSystem.handle_timeout_after_events
            and "next_timeout" not in system.__dict__
            and "handle_timeout_after_events" not in system.__dict__
        )
        # Whether a completed event reaches the notification system only when its config
        # notifies it (no subclass hooks in): then an event it does not notify is logged
        # without being shown to it, as a pending record (see EventLog.put_ran).
        self._notifies_by_config = kind.handle_event is BaseNotificationSystem.handle_event and (
            uses_base_rules(self.notification_system)
        )
        self.state = EnvironmentState.SETUP
        self.exception: BaseException | None = None
        self._listeners: list[Callable[[CompletedEvent], None]] = []
        self._known: set[AbstractEvent] = set()
        self._completed: set[AbstractEvent] = set()
        self._waiting: dict[AbstractEvent, int] = {}
        self._checks = Checks(self.event_queue, self.config.time_increment_in_seconds)
        self._lock: AbstractContextManager[object] = _NO_LOCK
        # The wall-clock time of the tick running now, on a real clock (see _tick).
        self._measured: float | None = None
        # On a real clock, the time the running event was due: what current_time says.
        self._running_at: float | None = None
        self._finalized = False

    # ----------------------------------------------------------------- queries

    @property
    def event_log(self) -> EventLog:
        """Every completed event, in completion order (which is time order)."""
        return self._event_log

    @property
    def current_time(self) -> float:
        """The simulated time now; while an event runs, the time it was due (the time it
        is logged at), also on a real clock, where the clock is a little past it by then.
        So a condition checked at the tick at 2 s sees 2 s in real time as on a virtual
        clock, and both loops give the same run (ARE gives the clock: its checks see
        2.0004 s)."""
        running_at = self._running_at
        return self.time_manager.time() if running_at is None else running_at

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
        """Host ``apps``: their agent calls are logged here, stamped with this clock. An
        app with reminders (``get_due_reminders``, as ARE's ``ReminderApp``) becomes the
        notification system's reminder app."""
        with self._lock:
            for app in apps:
                known = self.apps.get(app.name)
                if known is not None and known is not app:
                    raise ValueError(f"another app is already registered as {app.name!r}")
                self.apps[app.name] = app
                app.register_to_env("environment", self.add_to_log)
                app.register_time_manager(self.time_manager)
                if callable(getattr(app, "get_due_reminders", None)):
                    self.notification_system.setup_reminder_app(cast(ReminderSource, app))

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
        with self._lock:
            # One call schedules at one time (a real clock moves while it loops).
            now = self._schedule_base_time()
            self._register([events] if isinstance(events, AbstractEvent) else events, now)
            self._wake()

    def add_to_log(self, events: CompletedEvent | Sequence[CompletedEvent]) -> None:
        """Log completed events made outside the queue (agent calls to registered apps)."""
        if isinstance(events, CompletedEvent):  # every logged call: one event
            if self._lock is _NO_LOCK:  # (taking it is two calls that do nothing)
                self._record(events)
                return
            events = [events]
        with self._lock:
            for event in events:
                self._record(event)

    def resolve_arg_placeholders(
        self, event: Event, past_events: Iterable[CompletedEvent] | None = None
    ) -> Event:
        """``event`` with ``{{event_id}}`` / ``{{event_id.key.sub}}`` args replaced by the
        return values of past events.

        Without ``past_events``: against this environment's log, as the kernel runs
        events — a copy (``event`` itself if it has none); a whole-string placeholder keeps
        the value's type, embedded ones are formatted into the string; KeyError if a
        referenced event has not completed. With ``past_events``: ARE's method — only
        whole-string placeholders (surrounding blanks allowed) are resolved, into
        ``event.action.resolved_args`` in place; one naming no past event, or a key its
        value lacks, is left as written; ``event`` is returned.
        """
        if past_events is None:
            return resolve_arg_placeholders(event, self._event_log)
        return resolve_in_place(event, past_events)

    # --------------------------------------------------------------- step API

    def next_event_time(self) -> float | None:
        """When something is next due: a queued event or a notification timeout."""
        with self._lock:
            return self._next_due()

    def step(self) -> bool:
        """Move the clock to the next due time and run everything due then.

        Returns False, doing nothing, if nothing is due within the duration, or the
        environment is paused, stopped or failed. Starts a SETUP environment.
        """
        with self._lock:
            return self._step()

    def tick(self) -> None:
        """Run every event due at the clock's time now (ARE's ``tick``); starts a SETUP
        environment."""
        with self._lock:
            if self.state is EnvironmentState.SETUP:
                self._begin()
            if self.state is EnvironmentState.RUNNING:
                self._tick(self.time_manager.time())

    def prepare_events_for_start(self) -> None:
        """ARE's step before a first :meth:`tick`; nothing to do here, where
        :meth:`schedule` queues events at once."""

    def run_until(self, until: float) -> None:
        """Step through every time <= ``until``; a virtual clock then stands at ``until``
        (capped at the end of the duration)."""
        with self._lock:
            if self.state is EnvironmentState.SETUP:
                self._begin()
            while (due := self._next_due()) is not None and due <= until and self._step():
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
            while not self._idle(swept) and self._step():
                # The loop above, while live work is queued: _idle would clear ``swept``.
                if self._run_live(sys.maxsize):
                    swept.clear()

    def pause(self) -> None:
        """Stop processing events (and freeze a real clock) until :meth:`resume`."""
        with self._lock:
            if self.state is EnvironmentState.RUNNING:
                self.state = EnvironmentState.PAUSED
                self.time_manager.pause()

    def resume(self) -> None:
        """Continue after :meth:`pause`."""
        with self._lock:
            if self.state is EnvironmentState.PAUSED:
                self.time_manager.resume()
                self.state = EnvironmentState.RUNNING
                self._wake()

    def resume_with_offset(self, offset: float) -> None:
        """Jump the clock by ``offset`` seconds, then :meth:`resume`."""
        with self._lock:
            self.time_manager.add_offset(offset)
            self.resume()

    # --------------------------------------------------------------- internals
    # Callers hold ``_lock``; the loops call these directly rather than the public
    # methods, so a step costs no lock of its own even when a driver runs.

    def _begin(self) -> None:
        self.time_manager.reset(self.start_time)
        self.state = EnvironmentState.RUNNING

    def _wake(self) -> None:
        """Tell a driver waiting for work that something changed (the core alone has no
        one to tell)."""

    def _schedule_base_time(self) -> float:
        # Events scheduled during setup are relative to the start, not to setup wall time.
        if self.state is EnvironmentState.SETUP:
            return self.start_time
        return self.time_manager.time()

    def _next_due(self) -> float | None:
        due = self.event_queue.peek_time()
        timeout = self.notification_system.next_timeout()
        if timeout is None:
            return due
        return timeout if due is None else min(due, timeout)

    def _step(self) -> bool:
        state = self.state
        if state is not _RUNNING:
            if state is not EnvironmentState.SETUP:
                return False
            self._begin()
        # _next_due() inlined: this runs once per step.
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

    def _run_live(self, limit: int) -> int:
        """``while _has_live_work() and _step()``, at most ``limit`` times: how many steps
        it took. The queue-driven loops' hot path: on a virtual clock the step and its
        tick are inlined here, one frame for any number of events."""
        time_manager = self.time_manager
        notifications = self.notification_system
        if (
            not time_manager.virtual
            or self.config.verbose
            or self._opens_every_tick
            or not self._closes_by_base
        ):
            taken = 0
            while taken < limit and self._has_live_work() and self._step():
                taken += 1
            return taken
        queue = self.event_queue
        pop_due = queue.pop_due
        live_time = queue.peek_time_if_live
        close_tick = notifications.handle_timeout_after_events
        end = math.inf if self.end_time is None else self.end_time
        runners = RUNNERS
        taken = 0
        # The first event of the next tick when it was popped with the last of this
        # one's (see below): it is run next, whatever else happens before.
        ahead: tuple[float, AbstractEvent] | None = None
        while taken < limit and self.state is _RUNNING:
            # _has_live_work() and the start of _step(), inlined.
            due: float | None
            popped = ahead
            ahead = None
            if popped is not None:
                due = popped[0]
            elif (
                notifications.pending_timeout is None  # next_timeout()
                and notifications.reminder_app is None
            ):
                # Nothing opens the tick: its first event is popped at once, if live
                # work is queued and it is due by the end.
                popped = pop_due(end, True)
                if popped is None:
                    break
                due = popped[0]
            else:
                timeout = notifications.pending_timeout
                if timeout is None:
                    due = live_time()
                else:
                    due = queue.peek_time()
                    if due is None or timeout < due:
                        due = timeout
                if due is None or due > end:
                    break
            # TimeManager.time() and add_offset() on a virtual clock.
            now = time_manager.start_time + time_manager.offset
            if due > now:
                time_manager.offset += due - now
                now = due
            # _tick(now) on a virtual clock.
            try:
                if popped is None:
                    if notifications.reminder_app is not None:
                        notifications.handle_time_based_notifications(now)
                    popped = pop_due(now) if self.state is _RUNNING else None
                while popped is not None:
                    due, event = popped
                    if type(event) is Event:
                        self._run_event(event, due)
                    else:
                        run = runners.get(type(event))
                        if run is None:
                            run = runner_for(type(event))
                        run(self, event, due)
                    if self.state is not _RUNNING:
                        break
                    if (
                        taken + 1 < limit
                        and notifications.pending_timeout is None
                        and notifications.reminder_app is None
                    ):
                        # Nothing will open the next tick, which this slice takes:
                        # one pop gives the next event of this tick or the first of
                        # the next (closing a tick changes no queue).
                        popped = pop_due(end, True)
                        if popped is None:
                            popped = pop_due(now)  # a polling check due now
                        elif popped[0] > now:
                            ahead = popped
                            break
                    else:
                        popped = pop_due(now)
                if notifications.notified_in_tick or notifications.pending_timeout is not None:
                    close_tick(now)
            except BaseException as error:
                self.exception = error
                self._finish(EnvironmentState.FAILED)
                raise
            taken += 1
        return taken

    def _idle(self, swept: set[AbstractEvent]) -> bool:
        """True once nothing but polling checks is queued and each of them was evaluated
        once more since then (with nothing else acting, a check that fails then would
        fail forever). ``swept`` carries the checks evaluated so far between calls."""
        queue = self.event_queue
        # _has_live_work() inlined: this runs once per step of run_until_idle.
        if queue.has_live_events() or self.notification_system.next_timeout() is not None:
            swept.clear()
            return False
        upcoming = queue.peek()
        if upcoming is None or upcoming[1] in swept:
            return True
        swept.add(upcoming[1])
        return False

    def _has_live_work(self) -> bool:
        return (
            self.event_queue.has_live_events()
            or self.notification_system.next_timeout() is not None
        )

    def _register(self, events: Iterable[AbstractEvent], now: float) -> None:
        """Take in each of ``events`` not known yet: queue it, or count the dependencies
        it waits for (an OracleEvent outside oracle mode is dropped)."""
        known = self._known
        completed = self._completed
        enqueue = self._enqueue
        for event in events:
            if event in known:
                continue
            # The type test first: it settles the common case (a plain Event) at once.
            if (
                type(event) is not Event
                and isinstance(event, OracleEvent)
                and not self.config.oracle_mode
            ):
                continue
            known.add(event)
            dependencies = event.dependencies
            if dependencies:
                pending = 0
                # A plain loop: most events have one dependency, where a generator costs
                # more than the count.
                for parent in dependencies:
                    if parent not in completed:
                        pending += 1
                if pending:
                    self._waiting[event] = pending
                    continue
            enqueue(event, now)

    def _enqueue(self, event: AbstractEvent, now: float) -> None:
        event_time = event.event_time
        if event_time is not None:
            due = max(event_time, now)
        else:
            due = now + (event.event_relative_time or 0)
        if type(event) is not Event and isinstance(event, CHECK_KINDS) and event.timeout is None:
            # A check without a timeout would poll forever: it must not keep a run alive.
            self.event_queue.put(event, due, False)
        else:
            self.event_queue.put(event, due)

    def _complete(self, event: AbstractEvent, now: float) -> None:
        self._completed.add(event)
        if event.successors:
            self._release(event, now)

    def _release(self, event: AbstractEvent, now: float) -> None:
        """Queue (or count down) the successors of ``event``, which just completed."""
        waiting = self._waiting
        for child in event.successors:
            if child not in self._known:
                self._register((child,), now)
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
        measured = self._measured
        if measured is not None and completed.event_time != measured:
            completed.measured_time = measured
        self._event_log.put(completed)
        self.notification_system.handle_event(completed)
        for listener in self._listeners:
            listener(completed)

    def _tick(self, now: float) -> None:
        """Open the tick (due reminders are notified), run every queued event due at or
        before ``now``, then close the tick.

        Each event runs, and is logged, at the time it was due (as ARE logs the
        scheduled tick); on a real clock the time it actually ran is kept beside, in
        ``CompletedEvent.measured_time``, when that differs.
        """
        if self.config.verbose:
            logger.info("tick at %s", now)
        pop_due = self.event_queue.pop_due
        real_clock = not self.time_manager.virtual
        if real_clock:
            self._measured = now
        notifications = self.notification_system
        try:
            if self._opens_every_tick or notifications.reminder_app is not None:
                notifications.handle_time_based_notifications(now)
            while self.state is _RUNNING:
                popped = pop_due(now)
                if popped is None:
                    break
                due, event = popped
                if real_clock:
                    self._running_at = due
                run = RUNNERS.get(type(event))
                if run is None:
                    run = runner_for(type(event))
                run(self, event, due)
            notifications.handle_timeout_after_events(now)
        except BaseException as error:
            self.exception = error
            self._finish(EnvironmentState.FAILED)
            raise
        finally:
            self._measured = None
            self._running_at = None

    def _finish(self, state: EnvironmentState) -> None:
        """Enter a final state once (FAILED wins over STOPPED), notify it (in ARE's
        words) and dump in oracle mode."""
        if self.state is not EnvironmentState.FAILED:
            self.state = state
        self._wake()
        if self._finalized:
            return
        self._finalized = True
        self.notification_system.message_queue.put(
            Message(
                MessageType.ENVIRONMENT_STOP,
                f"Environment stopped with state {self.state}",
                to_datetime(self.time_manager.time()),
            )
        )
        if self.config.oracle_mode and self.config.dump_dir is not None:
            dump_state(self.get_state(), self.config.dump_dir)
