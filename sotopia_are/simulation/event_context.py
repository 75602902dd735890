"""Who owns the decorated app calls made in this thread or asyncio task.

The state is a context variable, not a module global, so environments in different
threads or asyncio tasks never see each other's: None (a call is an agent's own and is
logged), the scheduled event executing now (calls are part of it), or a
:class:`RegistrationMode`. While a kernel loop runs, the variable holds the loop's
:class:`RunningEvents`, through which the state is read (:func:`registration_state`).
"""

from __future__ import annotations

import enum
import traceback
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from sotopia_are.simulation.actions import EventMetadata

if TYPE_CHECKING:
    from sotopia_are.simulation.events import AbstractEvent

__all__ = [
    "REGISTRATION_STATE",
    "RegistrationMode",
    "RunningEvents",
    "current_event",
    "failure_metadata",
    "registration_state",
    "run_action",
]


class RegistrationMode(enum.Enum):
    """CAPTURE: decorated calls return the event they would make, unexecuted.
    SUPPRESSED: decorated calls run as plain calls and are not logged."""

    CAPTURE = "capture"
    SUPPRESSED = "suppressed"


class RunningEvents:
    """The registration state of the thread or task a kernel loop runs in, for as long as
    it runs: ``current`` is the state in force, the event whose action runs now or,
    between events, the state the loop started under.

    The loop installs one in :data:`REGISTRATION_STATE` once and moves ``current`` from
    event to event: an attribute store each, where setting and resetting the context
    variable around every event cost a tenth of the kernel's work per event. The object
    is the loop's own; a context copied while an action runs shares it, and so reads the
    state in force now, not the one when it was copied.
    """

    __slots__ = ("current",)

    def __init__(self, current: AbstractEvent | RegistrationMode | None) -> None:
        self.current = current


REGISTRATION_STATE: ContextVar[AbstractEvent | RegistrationMode | RunningEvents | None] = (
    ContextVar("sotopia_are_registration_state", default=None)
)


def registration_state() -> AbstractEvent | RegistrationMode | None:
    """The state in force in this thread / task: None (calls are an agent's own), the
    scheduled event executing, or a :class:`RegistrationMode`."""
    state = REGISTRATION_STATE.get()
    return state.current if isinstance(state, RunningEvents) else state


def current_event() -> AbstractEvent | None:
    """The scheduled event whose action this thread / task is executing, if any."""
    state = registration_state()
    return None if isinstance(state, RegistrationMode) else state


def run_action(
    owner: AbstractEvent | RegistrationMode | None,
    call: Callable[..., Any],
    /,
    *args: Any,
    **kwargs: Any,
) -> tuple[Exception | None, EventMetadata]:
    """Run ``call(*args, **kwargs)`` as one transaction owned by ``owner``: ``(None,
    metadata with its return value)``, or ``(the exception, metadata describing it)``;
    never raises one."""
    token = REGISTRATION_STATE.set(owner)
    try:
        value = call(*args, **kwargs)
    except Exception as error:
        return error, failure_metadata(error)
    finally:
        REGISTRATION_STATE.reset(token)
    return None, EventMetadata(return_value=value)


def failure_metadata(error: Exception) -> EventMetadata:
    """The record of a call that raised ``error``: "Type: message" and the traceback.
    Call it while handling ``error`` (the traceback is the one being handled)."""
    return EventMetadata(
        exception=f"{type(error).__name__}: {error}",
        exception_stack_trace=traceback.format_exc(),
    )
