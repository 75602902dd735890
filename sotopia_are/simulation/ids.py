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

__all__ = ["IdSource", "id_namespace", "new_id", "uuid4_text"]


class IdSource:
    """A stream of reproducible uuid4-shaped ids: sha256(namespace, n) for n = 0, 1, …"""

    __slots__ = ("_counter", "_prefixed")

    def __init__(self, namespace: str) -> None:
        self._prefixed = hashlib.sha256(namespace.encode() + b"\x00")
        self._counter = itertools.count()

    def next(self) -> str:
        """The next id of the stream."""
        hashed = self._prefixed.copy()
        hashed.update(b"%d" % next(self._counter))
        # digest().hex(): the same text as hexdigest(), which OpenSSL makes more slowly.
        text = hashed.digest().hex()
        # _uuid4_of_hex, inline: twice per logged event.
        return (
            f"{text[:8]}-{text[8:12]}-4{text[13:16]}-{_VARIANT_DIGIT[text[16]]}{text[17:20]}-"
            f"{text[20:32]}"
        )


def uuid4_text(digest: bytes) -> str:
    """``str(uuid.UUID(bytes=digest[:16], version=4))``, made without the ``UUID`` object
    (twice per logged event: the object is most of the cost of an id)."""
    return _uuid4_of_hex(digest.hex())


# The variant's hex digit (RFC 4122: the digit's two high bits are 10) for each digit.
_VARIANT_DIGIT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def _uuid4_of_hex(text: str) -> str:
    """:func:`uuid4_text` of the digest whose hex digits are ``text``: the version's digit
    becomes 4, the variant's keeps its two low bits."""
    return (
        f"{text[:8]}-{text[8:12]}-4{text[13:16]}-{_VARIANT_DIGIT[text[16]]}{text[17:20]}-"
        f"{text[20:32]}"
    )


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
