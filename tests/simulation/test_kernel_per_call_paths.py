"""The kernel's per-event shortcuts say what the general forms they replace say."""

from __future__ import annotations

import gc
import hashlib
import inspect
import sys
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.data_handler.exporter import (
    convert_completed_event,
    export_and_keep,
    take_export,
)
from sotopia_are.simulation.environment import Environment, EnvironmentConfig
from sotopia_are.simulation.ids import IdSource, uuid4_text
from sotopia_are.simulation.registration import _named_args
from sotopia_are.simulation.types import event_registered


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


def _logged_event(text: str) -> Any:
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False))
    app = _Notes()
    env.register_apps([app])
    app.note(text, "t")
    [event] = env.event_log.list_view()
    return event


def test_an_export_kept_for_the_store_is_the_one_its_record_takes() -> None:
    event = _logged_event("hello")
    kept = export_and_keep(event)
    assert kept == convert_completed_event(event)
    assert take_export(event) is kept  # converted once
    again = take_export(event)  # taken already: converted again, the same
    assert again is not kept and again == kept
    other = _logged_event("bye")
    assert take_export(other) == convert_completed_event(other)  # never kept


def test_an_export_is_kept_no_longer_than_its_event() -> None:
    event = _logged_event("hello")
    kept = export_and_keep(event)
    held = sys.getrefcount(kept)
    del event
    gc.collect()
    assert sys.getrefcount(kept) == held - 1
