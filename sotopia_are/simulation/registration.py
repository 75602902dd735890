"""Registration: ``event_registered`` app methods turn agents' calls into log records.

A decorated call made by an agent runs as one transaction and is sent to the app's
environment as a :class:`~sotopia_are.simulation.events.CompletedEvent`; a call made while
a scheduled event executes is part of that event; in capture mode the call is not made
and the :class:`~sotopia_are.simulation.events.Event` that would make it is returned.
Which of these applies is the thread's / task's state in :mod:`.event_context`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import MethodType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from sotopia_are.simulation.actions import Action, EventMetadata, OperationType
from sotopia_are.simulation.event_context import (
    REGISTRATION_STATE,
    RegistrationMode,
    failure_metadata,
)
from sotopia_are.simulation.events import CompletedEvent, Event, EventType

if TYPE_CHECKING:
    from sotopia_are.simulation.apps.app import App

__all__ = ["REGISTERED_CALL_CODE", "EventRegisterer", "disable_events", "event_registered"]

P = ParamSpec("P")
R = TypeVar("R")
AppT = TypeVar("AppT", bound="App")


@functools.lru_cache(maxsize=1024)
def _signature(func: Callable[..., Any]) -> inspect.Signature:
    """``inspect.signature`` once per decorated method (it is slow on the per-call path)."""
    return inspect.signature(func)


@functools.lru_cache(maxsize=1024)
def _positional_binding(func: Callable[..., Any]) -> tuple[tuple[str, ...], int]:
    """The names of the parameters after the first (the app) that positional arguments
    bind to, and how many positional arguments a call must give at least for them to bind
    alone (more than there are names when a keyword-only parameter is required). Once
    per decorated method, like :func:`_signature`."""
    names: list[str] = []
    required = 0
    for parameter in list(_signature(func).parameters.values())[1:]:
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            names.append(parameter.name)
            if parameter.default is parameter.empty:
                required = len(names)
        elif parameter.kind is parameter.KEYWORD_ONLY and parameter.default is parameter.empty:
            return tuple(names), len(names) + 1
    return tuple(names), required


def _named_args(
    func: Callable[..., Any], app: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The call's arguments by parameter name (defaults not filled in)."""
    if not args:
        return dict(kwargs)
    names, required = _positional_binding(func)
    if not kwargs and required <= len(args) <= len(names):
        # What Signature.bind gives for positional arguments that bind alone, without its
        # cost on the path of every logged call.
        return dict(zip(names, args, strict=False))
    signature = _signature(func)
    bound = signature.bind(app, *args, **kwargs).arguments
    bound.pop(next(iter(signature.parameters)))
    return dict(bound)


def _captured_args(
    func: Callable[..., Any], app: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The args of a captured call as ARE captures them: every parameter by name, ``self``
    (the app) and the defaults not passed included."""
    bound = _signature(func).bind(app, *args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


_new = object.__new__


def _returned(value: Any) -> EventMetadata:
    """``EventMetadata(return_value=value)``, made without the dataclass's keyword binding
    (every logged call makes one)."""
    metadata = _new(EventMetadata)
    metadata.return_value = value
    metadata.exception = None
    metadata.exception_stack_trace = None
    metadata.completed = True
    return metadata


def _app_call(
    function: Callable[..., Any],
    args: dict[str, Any],
    app: App,
    action_id: str,
    operation_type: OperationType,
) -> Action:
    """``Action(function=..., args=..., app=..., action_id=..., operation_type=...)`` of a
    logged call: every field set as ``__init__`` sets it, without its keyword binding, its
    default factory and ``__post_init__`` (which does nothing when the app and a non-empty
    id are given, as a logged call gives them). Every logged call makes one."""
    action = _new(Action)
    action.function = function
    action.args = args
    action.resolved_args = {}
    action.app = app
    action.action_id = action_id
    action.operation_type = operation_type
    action.tool_metadata = None
    return action


def _logged_event(
    event_type: EventType,
    event_time: float,
    event_id: str,
    action: Action,
    metadata: EventMetadata,
) -> CompletedEvent:
    """``CompletedEvent(event_type=..., event_time=..., event_id=..., action=...,
    metadata=...)``: every field set as ``__init__`` sets it (the others to their defaults,
    fresh lists for the dependencies and successors), without its keyword binding, default
    factories and ``__post_init__`` (which does nothing for a non-empty id). Every logged
    call makes one."""
    event = _new(CompletedEvent)
    event.event_type = event_type
    event.event_time = event_time
    event.event_relative_time = None
    event.event_id = event_id
    event.dependencies = []
    event.successors = []
    event.action = action
    event.metadata = metadata
    event.measured_time = None
    return event


class EventRegisterer:
    """Turns decorated app calls into log records, or into events in capture mode."""

    @staticmethod
    def is_capture_mode() -> bool:
        """Whether decorated calls in this thread / task are being captured."""
        return REGISTRATION_STATE.get() is RegistrationMode.CAPTURE

    @staticmethod
    @contextmanager
    def capture_mode() -> Iterator[None]:
        """Decorated calls in the block are not executed; each returns the :class:`Event`
        that would make it (ENV type, USER for USER-type tools), ready to schedule."""
        token = REGISTRATION_STATE.set(RegistrationMode.CAPTURE)
        try:
            yield
        finally:
            REGISTRATION_STATE.reset(token)

    @staticmethod
    @contextmanager
    def disable() -> Iterator[None]:
        """Decorated calls in the block run as plain calls and are not logged."""
        token = REGISTRATION_STATE.set(RegistrationMode.SUPPRESSED)
        try:
            yield
        finally:
            REGISTRATION_STATE.reset(token)

    @staticmethod
    def event_registered(
        operation_type: OperationType = OperationType.READ,
        event_type: EventType = EventType.AGENT,
    ) -> Callable[[Callable[Concatenate[AppT, P], R]], Callable[Concatenate[AppT, P], R]]:
        """Decorate an App method so each call made outside any event is logged once.

        A call made by an agent (no event executing) runs and is sent, as one
        ``event_type`` :class:`CompletedEvent` at the app's current time, to the app's
        environment (not logged if the app is not registered). A call made while a
        scheduled event executes is part of that event and is not logged again. In
        capture mode the call is not run and its :class:`Event` is returned instead.
        """

        def decorator(func: Callable[Concatenate[AppT, P], R]) -> Callable[Concatenate[AppT, P], R]:
            @functools.wraps(func)
            def wrapper(app: AppT, /, *args: P.args, **kwargs: P.kwargs) -> R:
                state = REGISTRATION_STATE.get()
                if state is None:
                    return _call_and_log(app, func, args, kwargs)
                if state is RegistrationMode.CAPTURE:
                    return cast(R, _capture(app, bound_wrapper(app), func, args, kwargs))
                return func(app, *args, **kwargs)

            def bound_wrapper(app: AppT) -> Callable[..., R]:
                return cast(Callable[..., R], MethodType(wrapper, app))

            # The names the path of every logged call reads, bound once per method.
            event_id_prefix = f"{event_type.value}-"
            function_name = func.__name__
            suppressed = RegistrationMode.SUPPRESSED
            set_state, reset_state = REGISTRATION_STATE.set, REGISTRATION_STATE.reset

            def _call_and_log(
                app: AppT,
                func: Callable[Concatenate[AppT, P], R],
                args: tuple[Any, ...],
                kwargs: dict[str, Any],
            ) -> R:
                callbacks = app.add_event_callbacks
                if not callbacks:
                    return func(app, *args, **kwargs)
                event_time = app.time_manager.time()
                # event_context.run_action(suppressed, func, app, *args, **kwargs), inline:
                # one transaction, its exception (if any) described while it is handled.
                error: Exception | None = None
                token = set_state(suppressed)
                try:
                    value = func(app, *args, **kwargs)
                except Exception as raised:
                    error = raised
                    metadata = failure_metadata(raised)
                else:
                    metadata = _returned(value)
                finally:
                    reset_state(token)
                completed = _logged_event(
                    event_type,
                    event_time,
                    event_id_prefix + app.next_event_id(),
                    _app_call(
                        MethodType(wrapper, app),
                        _named_args(func, app, args, kwargs),
                        app,
                        f"{app.name}.{function_name}-{app.next_event_id()}",
                        operation_type,
                    ),
                    metadata,
                )
                for callback in list(callbacks.values()):
                    callback(completed)
                if error is not None:
                    raise error
                return cast(R, metadata.return_value)

            def _capture(
                app: AppT,
                bound: Callable[..., R],
                func: Callable[Concatenate[AppT, P], R],
                args: tuple[Any, ...],
                kwargs: dict[str, Any],
            ) -> Event:
                return Event(
                    event_type=EventType.USER if event_type is EventType.USER else EventType.ENV,
                    action=Action(
                        function=bound,
                        args=_captured_args(func, app, args, kwargs),
                        app=app,
                        operation_type=operation_type,
                    ),
                )

            wrapper.__operation_type__ = operation_type  # type: ignore[attr-defined]
            wrapper.__event_type__ = event_type  # type: ignore[attr-defined]
            return wrapper

        return decorator


event_registered = EventRegisterer.event_registered
disable_events = EventRegisterer.disable


def _unregistered(_app: App) -> None:
    """A method to decorate once, for the code object below."""


# The code of every registered method's wrapper (all share it): while a scheduled event
# executes, a wrapper only calls the method itself, so the kernel, which has just made
# the event the executing one, may call ``__wrapped__`` directly when a bound method's
# function runs this code.
REGISTERED_CALL_CODE = event_registered()(_unregistered).__code__
