"""Importable references to condition and validation functions."""

import functools
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
    assert resolve_callable_reference(reference) is module_level


def test_static_methods_round_trip() -> None:
    reference = callable_reference(Checks.static)
    assert reference.endswith(":Checks.static")
    assert resolve_callable_reference(reference) is Checks.static


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
        ("surely_not_a_module_xyz:f", "cannot be imported"),
        ("json:no_such_function", "no attribute"),
        ("json:__doc__", "not callable"),
    ],
)
def test_bad_references_say_what_is_wrong(reference: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        resolve_callable_reference(reference)
