"""The errors storage raises: each names what went wrong and the fix."""

from __future__ import annotations

__all__ = [
    "EpisodeExistsError",
    "EpisodeStateError",
    "JsonlFormatError",
    "RecordNotFoundError",
    "StorageConflictError",
    "StorageError",
    "StorageUnavailableError",
]


class StorageError(Exception):
    """Base of every storage error."""


class StorageUnavailableError(StorageError):
    """Redis cannot be reached, refused the credentials, or the embedded server won't start.

    Raised by :func:`~sotopia_are.storage.connect` before anything is written.
    """


class RecordNotFoundError(StorageError, KeyError):
    """No record with that primary key (a ``KeyError``, so ``except KeyError`` works too)."""

    def __str__(self) -> str:
        # KeyError's own __str__ repr()s the message; ours is already a sentence.
        return str(self.args[0]) if self.args else ""


class EpisodeStateError(StorageError):
    """An episode operation that its current status forbids (e.g. restarting a complete one)."""


class EpisodeExistsError(EpisodeStateError):
    """Restoring (importing) an episode whose id is already stored, without ``replace``."""


class StorageConflictError(StorageError):
    """A write kept losing to other writers of the same record and was given up (nothing
    of it was written)."""


class JsonlFormatError(StorageError, ValueError):
    """A JSONL line that is not a valid record; the message starts with ``source:line:``."""
