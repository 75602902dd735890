"""Who owns the decorated app calls made in this thread or asyncio task.

The state is a context variable, not a module global, so environments in different
threads or asyncio tasks never see each other's: None (a call is an agent's own and is
logged), the scheduled event executing now (calls are part of it), or a
:class:`RegistrationMode`. Every path that runs an event sets the variable to it around its
action and resets it after, so a context copied inside an action (a task or thread started
there) keeps that event, however the run is sliced.
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
    "current_event",
    "failure_metadata",
    "run_action",
]


class RegistrationMode(enum.Enum):
    """CAPTURE: decorated calls return the event they would make, unexecuted.
    SUPPRESSED: decorated calls run as plain calls and are not logged."""

    CAPTURE = "capture"
    SUPPRESSED = "suppressed"


REGISTRATION_STATE: ContextVar[AbstractEvent | RegistrationMode | None] = ContextVar(
    "sotopia_are_registration_state", default=None
)


def current_event() -> AbstractEvent | None:
    """The scheduled event whose action this thread / task is executing, if any."""
    state = REGISTRATION_STATE.get()
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
