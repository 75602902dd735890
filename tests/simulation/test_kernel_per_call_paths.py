"""The kernel's per-event shortcuts say what the general forms they replace say."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.simulation.actions import Action, EventMetadata, OperationType
from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.data_handler.exporter import (
    completed_event_json,
    convert_completed_event,
)
from sotopia_are.simulation.environment import Environment, EnvironmentConfig
from sotopia_are.simulation.ids import IdSource, uuid4_text
from sotopia_are.simulation.registration import _named_args
from sotopia_are.simulation.types import (
    CompletedEvent,
    CompletedOracleEvent,
    EventType,
    event_registered,
)


@given(st.binary(min_size=16, max_size=64))
def test_an_id_is_the_uuid4_of_its_digest(digest: bytes) -> None:
    assert uuid4_text(digest) == str(uuid.UUID(bytes=digest[:16], version=4))


@given(st.text(max_size=30), st.integers(1, 40))
def test_an_id_source_draws_uuid4s_of_the_namespace_and_count(namespace: str, count: int) -> None:
    source = IdSource(namespace)
    drawn = [source.next() for _ in range(count)]
    prefix = namespace.encode() + b"\x00"
    assert drawn == [
        str(uuid.UUID(bytes=hashlib.sha256(prefix + str(n).encode()).digest()[:16], version=4))
        for n in range(count)
    ]


def _plain(app: Any, a: Any, b: Any, c: Any = 3) -> None: ...
def _keyword_only(app: Any, a: Any, *, b: Any) -> None: ...
def _keyword_only_default(app: Any, a: Any, b: Any = 2, *, c: Any = 3) -> None: ...
def _star(app: Any, a: Any, *rest: Any, b: Any = 2) -> None: ...
def _positional_only(app: Any, a: Any, /, b: Any = 2) -> None: ...
def _no_more(app: Any) -> None: ...


FUNCTIONS = [_plain, _keyword_only, _keyword_only_default, _star, _positional_only, _no_more]


def _bound(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | str:
    """What Signature.bind names (the app left out), or the TypeError's class name."""
    try:
        bound = inspect.signature(func).bind("app", *args, **kwargs).arguments
    except TypeError:
        return "TypeError"
    bound.pop(next(iter(inspect.signature(func).parameters)))
    return dict(bound)


@given(
    st.sampled_from(FUNCTIONS),
    st.lists(st.integers(), max_size=5).map(tuple),
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.integers(), max_size=3),
)
def test_a_calls_arguments_are_named_as_signature_bind_names_them(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    expected = _bound(func, args, kwargs)
    try:
        named: dict[str, Any] | str = _named_args(func, "app", args, kwargs)
    except TypeError:
        named = "TypeError"
    if args:
        assert named == expected
    else:  # keyword arguments alone are taken as given, unchecked (as before)
        assert named == dict(kwargs)


class _Notes(App):
    @event_registered()
    def note(self, text: str, tag: str = "", *, loud: bool = False) -> str:
        return text.upper() if loud else text


def test_a_logged_calls_arguments_are_those_it_was_given() -> None:
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False))
    app = _Notes()
    env.register_apps([app])
    app.note("hi")
    app.note("hi", "x")
    app.note("hi", loud=True)
    with pytest.raises(TypeError):
        app.note("hi", "x", True)  # type: ignore[misc]
    logged = env.event_log.list_view()
    assert [event.action.args for event in logged] == [  # type: ignore[union-attr]
        {"text": "hi"},
        {"text": "hi", "tag": "x"},
        {"text": "hi", "loud": True},
    ]


class _Failing(App):
    @event_registered()
    def fail(self, text: str) -> str:
        raise ValueError(text)


def _fields(value: Any) -> dict[str, Any]:
    return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}


@pytest.mark.parametrize("fails", [False, True])
def test_a_logged_calls_event_is_what_the_dataclasses_constructors_make(fails: bool) -> None:
    """The logged call's event, action and metadata (made without the dataclasses'
    ``__init__``) have every field the constructors give them from the same values, the
    dependencies and successors fresh lists; the failure's metadata as run_action makes
    it. Fails when a field is added to one of them and not set by the fast way."""
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False))
    app = _Failing() if fails else _Notes()
    env.register_apps([app])
    with contextlib.suppress(ValueError):
        app.fail("boom") if fails else app.note("hi", "x")  # type: ignore[attr-defined]
    [event] = env.event_log.list_view()
    action = event.action
    assert type(event) is CompletedEvent and type(action) is Action
    expected = CompletedEvent(
        event_type=event.event_type,
        event_time=event.event_time,
        event_id=event.event_id,
        action=Action(
            function=action.function,
            args=action.args,
            app=action.app,
            action_id=action.action_id,
            operation_type=action.operation_type,
        ),
        metadata=EventMetadata(**_fields(event.metadata)),
    )
    assert _fields(event.action) == _fields(expected.action)
    assert _fields(event.metadata) == _fields(expected.metadata)
    assert {**_fields(event), "action": None} == {**_fields(expected), "action": None}
    assert event.dependencies == [] and event.dependencies is not event.successors
    assert event.action.resolved_args == {} and event.action.resolved_args is not action.args
    other = _logged_event("again")
    assert other.dependencies is not event.dependencies
    if fails:
        assert event.metadata.exception == "ValueError: boom"
        assert "raise ValueError(text)" in (event.metadata.exception_stack_trace or "")
        assert event.metadata.return_value is None
    else:
        assert event.metadata.return_value == "hi" and event.metadata.completed


def _logged_event(text: str, tag: str = "t") -> Any:
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False))
    app = _Notes()
    env.register_apps([app])
    app.note(text, tag)
    [event] = env.event_log.list_view()
    return event


def _outcome(make: Any) -> tuple[str, str]:
    """What ``make()`` gives: ("ok", its value) or (the error's type, its message)."""
    try:
        return "ok", make()
    except Exception as error:
        return type(error).__name__, str(error)


# Texts of any characters: escaped ones, non-ASCII, lone surrogates (JSON cannot hold).
_TEXT = st.text(st.characters(blacklist_categories=()), max_size=12)
_PLAIN_TEXT = st.text(max_size=12)
_TIME = st.one_of(
    st.floats(),
    st.floats(min_value=-1e17, max_value=1e17),
    st.floats(min_value=-0.01, max_value=0.01),
    st.integers(-5, 10**17),
    st.sampled_from([0.0, -0.0, 1e-3, 0.00099, 1e-5, 2.5e-7, 1e15, 1e16, 123.456]),
)
_VALUE = st.one_of(
    st.none(),
    _TEXT,
    _PLAIN_TEXT,
    st.integers(),
    st.floats(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)


@st.composite
def _mostly(draw: Any, usual: Any, rarely: Any) -> Any:
    """Drawn from ``usual`` about nine times in ten, else from ``rarely``."""
    return draw(usual if draw(st.sampled_from([True] * 9 + [False])) else rarely)


# Mostly what the store's shortcut takes (text and None), with the rest now and then.
_ARG = _mostly(st.one_of(st.none(), _TEXT, _PLAIN_TEXT, _PLAIN_TEXT), _VALUE)


@st.composite
def _completed_events(draw: Any) -> CompletedEvent:
    """Completed events of every shape the export has, mostly logged app calls."""
    app = _Notes(draw(st.sampled_from(["Notes", "Nötes", 'N"x'])))
    args = draw(st.dictionaries(_mostly(_PLAIN_TEXT, _TEXT), _ARG, max_size=4))
    action = Action(
        function=app.note,
        args=args,
        resolved_args=draw(_mostly(st.just({}), st.dictionaries(_PLAIN_TEXT, _ARG, max_size=2))),
        app=app,
        action_id=draw(st.one_of(_PLAIN_TEXT, _TEXT)),
        operation_type=draw(st.sampled_from(OperationType)),
    )
    kind = draw(_mostly(st.just(CompletedEvent), st.just(CompletedOracleEvent)))
    event: CompletedEvent = kind(
        event_type=draw(st.sampled_from(EventType)),
        event_time=draw(st.one_of(st.floats(0, 1e6), _TIME)),
        event_id=draw(st.one_of(_PLAIN_TEXT.filter(bool), _TEXT.filter(bool))),
        event_relative_time=draw(_mostly(st.none(), _TIME)),
        action=action,
        metadata=EventMetadata(
            return_value=draw(_mostly(st.one_of(st.none(), _PLAIN_TEXT), _ARG)),
            exception=draw(_mostly(st.none(), _TEXT)),
            exception_stack_trace=draw(_mostly(st.none(), _TEXT)),
        ),
    )
    if not draw(st.sampled_from([True] * 9 + [False])):
        event.dependencies.append(CompletedEvent(event_id=draw(_TEXT.filter(bool))))
    return event


@given(_completed_events())
def test_an_events_json_is_its_exports_json_byte_for_byte(event: CompletedEvent) -> None:
    # The store's text of an event is written without its model when it can be: the same
    # bytes, or the same error, as the model's JSON.
    assert _outcome(lambda: completed_event_json(event)) == _outcome(
        lambda: convert_completed_event(event).model_dump_json()
    )


@given(_TEXT, _TEXT)
def test_a_logged_calls_json_is_its_exports_json(text: str, tag: str) -> None:
    event = _logged_event(text, tag)
    assert _outcome(lambda: completed_event_json(event)) == _outcome(
        lambda: convert_completed_event(event).model_dump_json()
    )


@pytest.mark.parametrize(
    "time",
    [0.0, -0.0, 1e-3, 0.00099, 1e-5, 2.5e-7, 3.0, 1e15 - 1, 1e15, 1e16, 1.5e17, float("inf")],
)
def test_a_calls_time_is_written_as_its_export_writes_it(time: float) -> None:
    # Python's repr and pydantic write small floats differently (1e-05, 0.00001).
    event = _logged_event("hi")
    event.event_time = time
    assert completed_event_json(event) == convert_completed_event(event).model_dump_json()
