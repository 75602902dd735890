"""Deterministic event and action ids.

Ids look like ARE's (``ENV-<uuid4>``) but are drawn from a namespaced counter when one is
active, so the same scenario and seed give the same ids in every process.
"""

from __future__ import annotations

import hashlib
import itertools
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["IdSource", "id_namespace", "new_id"]


class IdSource:
    """A stream of reproducible uuid4-shaped ids: sha256(namespace, n) for n = 0, 1, …"""

    __slots__ = ("_counter", "_prefix")

    def __init__(self, namespace: str) -> None:
        self._prefix = namespace.encode() + b"\x00"
        self._counter = itertools.count()

    def next(self) -> str:
        """The next id of the stream."""
        digest = hashlib.sha256(self._prefix + str(next(self._counter)).encode()).digest()
        return str(uuid.UUID(bytes=digest[:16], version=4))


# Per thread / asyncio task, so environments in one process never share a stream.
_SOURCE: ContextVar[IdSource | None] = ContextVar("sotopia_are_id_source", default=None)


def new_id() -> str:
    """An id from the active namespace, or a random uuid4 outside any namespace."""
    source = _SOURCE.get()
    return str(uuid.uuid4()) if source is None else source.next()


@contextmanager
def id_namespace(namespace: str) -> Iterator[IdSource]:
    """Within the block, ids created by this thread/task come from ``IdSource(namespace)``."""
    source = IdSource(namespace)
    token = _SOURCE.set(source)
    try:
        yield source
    finally:
        _SOURCE.reset(token)
