"""Condition and validation checks: recurring looks at the environment, one per few ticks.

A :class:`ConditionCheckEvent` completes (releasing its dependants) once its predicate
holds, and gives up silently after its timeout. A :class:`ValidationEvent` succeeds once
every milestone has held at some check, and fails the environment as soon as a minefield
holds or its timeout passes with milestones unmet. Timeouts count ticks of
``time_increment_in_seconds`` from the first check.
"""

from __future__ import annotations

import enum
import re
import traceback
from dataclasses import dataclass

from sotopia_are.simulation.actions import AbstractEnvironment, EventMetadata
from sotopia_are.simulation.event_queue import EventQueue
from sotopia_are.simulation.events import AbstractEvent, ConditionCheckEvent, ValidationEvent

__all__ = ["CHECK_KINDS", "CheckOutcome", "Checks", "check_base_id", "check_event_id"]

CHECK_KINDS = (ConditionCheckEvent, ValidationEvent)
"""The event kinds that recur until settled (for ``isinstance``)."""


class CheckOutcome(enum.Enum):
    """What the environment does after a check.

    PENDING: nothing (it is queued again, or gave up at its timeout). PASSED: log it and
    release its dependants. BROKEN: log why its predicate raised; release nothing.
    FAILED: log it and fail the environment.
    """

    PENDING = "pending"
    PASSED = "passed"
    BROKEN = "broken"
    FAILED = "failed"


_CHECK_SUFFIX = re.compile(r"CHECK_\d+")


def check_event_id(event_id: str, index: int) -> str:
    """The log id of a condition check's ``index``-th evaluation (from 0), as ARE writes
    it: ``<id>-CHECK_<index>`` (an id that already holds ``CHECK_<n>`` has ``n`` replaced)."""
    if _CHECK_SUFFIX.search(event_id):
        return _CHECK_SUFFIX.sub(f"CHECK_{index}", event_id)
    return f"{event_id}-CHECK_{index}"


def check_base_id(logged_id: str) -> str:
    """The check's own id behind the log id of one of its evaluations (the id itself if
    it has no ``-CHECK_<n>`` suffix)."""
    return re.sub(r"-CHECK_\d+$", "", logged_id)


@dataclass
class _Progress:
    first_check: float
    achieved: set[int]
    checks: int = 0


class Checks:
    """Runs the checks of one environment and requeues the unsettled ones on ``queue``.

    Progress (when each check first ran, which milestones it saw met) is kept here, per
    environment: the events themselves are never mutated, so one scenario can be run by
    many environments.
    """

    def __init__(self, queue: EventQueue, time_increment_in_seconds: int) -> None:
        self._queue = queue
        self._increment = time_increment_in_seconds
        self._progress: dict[AbstractEvent, _Progress] = {}

    def run_condition(
        self, event: ConditionCheckEvent, env: AbstractEnvironment, now: float
    ) -> tuple[CheckOutcome, EventMetadata, int]:
        """Evaluate ``event``'s condition at ``now``: the outcome, its record (return value
        True or False, or why the predicate raised) and which evaluation of this check it
        was (from 0). ValueError if it has no condition."""
        if event.action is None:
            raise ValueError(f"condition check {event.event_id} has no condition")
        progress = self._progress.setdefault(event, _Progress(now, set()))
        index = progress.checks
        progress.checks += 1
        try:
            holds = event.action.execute(env)
        except Exception as error:
            # A broken predicate never holds: log why, and release no dependant.
            del self._progress[event]
            return CheckOutcome.BROKEN, _failure(error), index
        if holds:
            del self._progress[event]
            return CheckOutcome.PASSED, EventMetadata(return_value=True), index
        self._recheck(event, now)
        return CheckOutcome.PENDING, EventMetadata(return_value=False), index

    def run_validation(
        self, event: ValidationEvent, env: AbstractEnvironment, now: float
    ) -> tuple[CheckOutcome, EventMetadata | None]:
        """Validate ``env`` at ``now``: the outcome, and what to log (a
        :class:`ValidationResult`, or why a check raised; None when PENDING)."""
        progress = self._progress.setdefault(event, _Progress(now, set()))
        try:
            result = event.validate(env, progress.achieved)
        except Exception as error:
            del self._progress[event]
            return CheckOutcome.FAILED, _failure(error)
        if result.success:
            del self._progress[event]
            return CheckOutcome.PASSED, EventMetadata(return_value=result)
        if result.triggered_minefields or not self._recheck(event, now):
            self._progress.pop(event, None)
            return CheckOutcome.FAILED, EventMetadata(return_value=result)
        return CheckOutcome.PENDING, None

    def _recheck(self, event: ConditionCheckEvent | ValidationEvent, now: float) -> bool:
        """Queue the next check; False (and forget the check) once past its timeout."""
        first_check = self._progress[event].first_check
        next_check = now + event.schedule_every_ticks * self._increment
        if event.timeout is not None and next_check - first_check > event.timeout * self._increment:
            del self._progress[event]
            return False
        # A check without a timeout would poll forever: it must not keep a run alive.
        self._queue.put(event, next_check, event.timeout is not None)
        return True


def _failure(error: BaseException) -> EventMetadata:
    return EventMetadata(
        exception=f"{type(error).__name__}: {error}",
        exception_stack_trace="".join(traceback.format_exception(error)),
    )
