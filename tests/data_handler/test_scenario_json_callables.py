"""Importable references to condition and validation functions."""

import functools
import sys
from typing import Any

import pytest

from sotopia_are.simulation.data_handler.callables import (
    callable_reference,
    resolve_callable_reference,
)


def module_level(env: Any) -> bool:
    return True


class Checks:
    @staticmethod
    def static(env: Any) -> bool:
        return False


def test_module_level_functions_round_trip() -> None:
    reference = callable_reference(module_level)
    assert reference == f"{__name__}:module_level"
    assert resolve_callable_reference(reference, {__name__}) is module_level


def test_static_methods_round_trip() -> None:
    reference = callable_reference(Checks.static)
    assert reference.endswith(":Checks.static")
    assert resolve_callable_reference(reference, {__name__}) is Checks.static


def test_lambdas_and_closures_are_refused() -> None:
    def nested(env: Any) -> bool:
        return True

    with pytest.raises(ValueError, match="lambda or a nested function"):
        callable_reference(lambda env: True)
    with pytest.raises(ValueError, match="lambda or a nested function"):
        callable_reference(nested)


def test_objects_that_do_not_import_back_are_refused() -> None:
    with pytest.raises(ValueError):
        callable_reference(functools.partial(module_level))
    copy = functools.wraps(module_level)(lambda env: False)
    with pytest.raises(ValueError, match="different object"):
        callable_reference(copy)


@pytest.mark.parametrize(
    ("reference", "words"),
    [
        ("no_colon", "form"),
        ("surely_not_a_module_xyz:f", "not one of the modules loaded"),
        ("json:no_such_function", "no attribute"),
        ("json:__doc__", "not callable"),
        ("json:JSONDecodeError", "defined in 'json.decoder'"),
    ],
)
def test_bad_references_say_what_is_wrong(reference: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        resolve_callable_reference(reference, {"json", "surely_not_a_module_xyz"})


def test_references_never_import_and_stay_in_the_allowed_modules() -> None:
    assert "this" not in sys.modules
    with pytest.raises(ValueError, match="imports nothing"):
        resolve_callable_reference("this:s", {"json"})
    with pytest.raises(ValueError, match="imports nothing"):
        resolve_callable_reference("this:s", {"this"})  # allowed, yet never imported
    assert "this" not in sys.modules
    with pytest.raises(ValueError, match="defined in"):
        resolve_callable_reference(f"{__name__}:pytest.raises", {__name__})
