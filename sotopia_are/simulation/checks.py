"""Condition and validation checks: recurring looks at the environment, one per few ticks.

A :class:`ConditionCheckEvent` completes (releasing its dependants) once its predicate
holds, and gives up silently after its timeout. A :class:`ValidationEvent` succeeds once
every milestone has held at some check, and fails the environment as soon as a minefield
holds or its timeout passes with milestones unmet. Timeouts count ticks of
``time_increment_in_seconds`` from the first check.
"""

from __future__ import annotations

import enum
import traceback
from dataclasses import dataclass

from sotopia_are.simulation.actions import AbstractEnvironment, EventMetadata
from sotopia_are.simulation.event_queue import EventQueue
from sotopia_are.simulation.events import AbstractEvent, ConditionCheckEvent, ValidationEvent

__all__ = ["CHECK_KINDS", "CheckOutcome", "Checks"]

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


@dataclass
class _Progress:
    first_check: float
    achieved: set[int]


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
    ) -> tuple[CheckOutcome, EventMetadata | None]:
        """Evaluate ``event``'s condition at ``now``: the outcome, and what to log (None
        when PENDING). ValueError if it has no condition."""
        if event.action is None:
            raise ValueError(f"condition check {event.event_id} has no condition")
        self._progress.setdefault(event, _Progress(now, set()))
        try:
            holds = event.action.execute(env)
        except Exception as error:
            # A broken predicate never holds: log why, and release no dependant.
            del self._progress[event]
            return CheckOutcome.BROKEN, _failure(error)
        if holds:
            del self._progress[event]
            return CheckOutcome.PASSED, EventMetadata(return_value=True)
        self._recheck(event, now)
        return CheckOutcome.PENDING, None

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
