"""`EventRunners`: how the kernel runs one event of each kind — a plain ``Event`` (its app
call), an ``OracleEvent``, a condition check, a validation, a stop — kept apart from the
core (:mod:`.environment_core`), which owns the clock, the queue and the run loops.

Contract: the kernel's loops pop ``(due, event)`` and call ``RUNNERS[type(event)]`` (or
:func:`runner_for` for a subclass) with the core, the event and ``due``. A runner runs the
event at ``due``, logs what it did through the core's ``_record`` (a plain Event may be logged
pending, see ``EventLog.put_ran``), then either completes it — its dependants are released —
or, for a check still pending, leaves it queued; a failed check or a stop ends the run through
``_finish``. Runners are methods of a mixin the core inherits, so a loop calls them with no
extra frame; the mixin only declares what it uses of the core.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MethodType
from typing import Any

from sotopia_are.simulation.actions import AbstractEnvironment, Action, EventMetadata
from sotopia_are.simulation.checks import CheckOutcome, Checks, check_event_id
from sotopia_are.simulation.environment_config import EnvironmentConfig, EnvironmentState
from sotopia_are.simulation.event_context import REGISTRATION_STATE, failure_metadata
from sotopia_are.simulation.event_log import EventLog
from sotopia_are.simulation.events import (
    AbstractEvent,
    CompletedEvent,
    ConditionCheckEvent,
    Event,
    OracleEvent,
    StopEvent,
    ValidationEvent,
)
from sotopia_are.simulation.notification_system import BaseNotificationSystem
from sotopia_are.simulation.oracle import run_oracle
from sotopia_are.simulation.placeholders import has_placeholder, resolve_arg_placeholders
from sotopia_are.simulation.registration import REGISTERED_CALL_CODE

__all__ = ["RUNNERS", "EventRunners", "Runner", "runner_for"]


class EventRunners(AbstractEnvironment):
    """One runner per event kind, for :class:`~.environment_core.EnvironmentCore` to
    inherit; each is looked up in :data:`RUNNERS` by the event's type. An environment
    itself: conditions, validations and oracles are handed ``self``."""

    # What the runners use of the core, which sets or defines all of it.
    config: EnvironmentConfig
    notification_system: BaseNotificationSystem
    _event_log: EventLog
    _listeners: list[Callable[[CompletedEvent], None]]
    _completed: set[AbstractEvent]
    _checks: Checks
    _measured: float | None
    _notifies_by_config: bool
    _record: Callable[[CompletedEvent], None]
    _complete: Callable[[AbstractEvent, float], None]
    _release: Callable[[AbstractEvent, float], None]
    _finish: Callable[[EnvironmentState], None]

    def _run_event(self, event: Event, now: float) -> None:
        action = event.action
        # Event.execute and Action.execute inlined for a plain Event calling a plain
        # Action with its own args, no placeholder and no ``self`` among them.
        if type(action) is not Action or action.resolved_args or "self" in action.args:
            self._run_event_as_written(event, now)
            return
        args = action.args
        for value in args.values():
            if type(value) is str and "{{" in value:
                self._run_event_as_written(event, now)
                return
        function = action.function
        failure: EventMetadata | None = None
        token = REGISTRATION_STATE.set(event)
        try:
            if (
                type(function) is MethodType
                and getattr(function.__func__, "__code__", None) is REGISTERED_CALL_CODE
            ):
                # An event_registered method: its wrapper would only call it now.
                value = function.__func__.__wrapped__(function.__self__, **args)  # type: ignore[attr-defined]
            else:
                value = function(**args)
        except Exception as error:
            failure = failure_metadata(error)
        finally:
            REGISTRATION_STATE.reset(token)
        # The record is made at once for a listener, a notification system that is shown
        # it (its own hooks, or a notification of it) or a real clock's measured time;
        # else it is logged pending, to be made when the log is read.
        if (
            failure is None
            and not self._listeners
            and self._measured is None
            and self._notifies_by_config
            and not self.notification_system.is_notified(event)
        ):
            self._event_log.put_ran(event, now, value)
        else:
            self._record(
                CompletedEvent(
                    event_type=event.event_type,
                    event_time=now,
                    event_id=event.event_id,
                    dependencies=list(event.dependencies),
                    event_relative_time=event.event_relative_time,
                    action=action,
                    metadata=EventMetadata(return_value=value) if failure is None else failure,
                )
            )
        self._completed.add(event)
        if event.successors:
            self._release(event, now)

    def _run_event_as_written(self, event: Event, now: float) -> None:
        """Run ``event`` through ``Event.execute`` (placeholders resolved first)."""
        action = event.action
        to_run = event
        if action is not None and has_placeholder(action.args):
            to_run = resolve_arg_placeholders(event, self._event_log)
        self._record(to_run.execute(event_time=now))
        self._complete(event, now)

    def _run_oracle(self, oracle: OracleEvent, now: float) -> None:
        self._record(run_oracle(oracle, self, now))
        self._complete(oracle, now)

    def _run_condition(self, event: ConditionCheckEvent, now: float) -> None:
        outcome, metadata, index = self._checks.run_condition(event, self, now)
        if self.config.log_every_condition_check:
            self._record_own(event, now, metadata, check_event_id(event.event_id, index))
            if outcome is CheckOutcome.PASSED:
                self._complete(event, now)
            return
        self._settle(event, now, outcome, None if outcome is CheckOutcome.PENDING else metadata)

    def _run_validation(self, event: ValidationEvent, now: float) -> None:
        self._settle(event, now, *self._checks.run_validation(event, self, now))

    def _run_stop(self, event: StopEvent, now: float) -> None:
        self._record_own(event, now, EventMetadata())
        self._complete(event, now)
        self._finish(EnvironmentState.STOPPED)

    def _settle(
        self,
        event: ConditionCheckEvent | ValidationEvent,
        now: float,
        outcome: CheckOutcome,
        metadata: EventMetadata | None,
    ) -> None:
        """Act on a check's outcome: log it, then release its dependants or fail."""
        if metadata is not None:
            self._record_own(event, now, metadata)
        if outcome is CheckOutcome.PASSED:
            self._complete(event, now)
        elif outcome is CheckOutcome.FAILED:
            self._finish(EnvironmentState.FAILED)

    def _record_own(
        self,
        event: ConditionCheckEvent | ValidationEvent | StopEvent,
        now: float,
        metadata: EventMetadata,
        event_id: str | None = None,
    ) -> None:
        """Log an event the kernel runs itself (no app call): a check, or a stop;
        ``event_id`` replaces the event's own id in the record."""
        self._record(
            CompletedEvent(
                event_type=event.event_type,
                event_time=now,
                event_id=event.event_id if event_id is None else event_id,
                dependencies=list(event.dependencies),
                event_relative_time=event.event_relative_time,
                action=event.action if isinstance(event, ConditionCheckEvent) else None,
                metadata=metadata,
            )
        )


Runner = Callable[[EventRunners, Any, float], None]

# Keyed on the exact type: one dict lookup per event instead of a chain of isinstance
# checks. Each runner receives only events of its key's kind, hence the ``Any``.
RUNNERS: dict[type[AbstractEvent], Runner] = {
    Event: EventRunners._run_event,
    OracleEvent: EventRunners._run_oracle,
    ConditionCheckEvent: EventRunners._run_condition,
    ValidationEvent: EventRunners._run_validation,
    StopEvent: EventRunners._run_stop,
}


def runner_for(kind: type[AbstractEvent]) -> Runner:
    """The runner of ``kind``'s nearest kind with one (a subclass runs as its base does);
    TypeError if there is none."""
    for base in kind.__mro__:
        run = RUNNERS.get(base)
        if run is not None:
            return run
    raise TypeError(f"cannot process an event of type {kind.__name__}")
