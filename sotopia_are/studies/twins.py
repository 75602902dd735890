"""Synchronous twins of the async verbs (``run`` of ``arun``, …), declared once.

A twin's parameters are its coroutine's: :func:`twin_of` types the twin with the
coroutine's parameters (a ``ParamSpec``) and gives it the coroutine's signature, so
``help(sa.run)`` and ``inspect.signature`` show the contract, and a parameter added to
``arun`` is ``run``'s too. The twin keeps its own name and docstring (for scripts: it
runs the coroutine on a new event loop).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar, cast

__all__ = ["twin_of"]

P = ParamSpec("P")
R = TypeVar("R")


def twin_of(
    coroutine: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[[Callable[..., R]], Callable[P, R]]:
    """Make the decorated function the synchronous twin of ``coroutine``: typed with and
    showing ``coroutine``'s parameters, its own name, docstring and body kept (the body
    passes its arguments on: ``return asyncio.run(arun(*args, **kwargs))``)."""

    def decorate(twin: Callable[..., R]) -> Callable[P, R]:
        twin.__signature__ = inspect.signature(coroutine)  # type: ignore[attr-defined]
        return cast(Callable[P, R], twin)

    return decorate
