"""The errors storage raises: each names what went wrong and the fix."""

from __future__ import annotations

from sotopia_are import SotopiaAreError

__all__ = [
    "EmptySelectionError",
    "EpisodeExistsError",
    "EpisodeStateError",
    "JsonlFormatError",
    "RecordNotFoundError",
    "StorageConflictError",
    "StorageError",
    "StorageRefusedError",
    "StorageUnavailableError",
    "UnreadableRecordError",
    "already_played",
]


class StorageError(SotopiaAreError):
    """Base of every storage error."""


class StorageUnavailableError(StorageError):
    """Redis cannot be reached, refused the credentials, or the embedded server won't start.

    Raised by :func:`~sotopia_are.storage.connect` before anything is written.
    """


class StorageRefusedError(StorageError):
    """The server is reachable but refuses writes: it is at its memory limit
    (``maxmemory`` with no eviction), a read-only replica, or cannot save to disk
    (``MISCONF``: disk full or not writable). ``cause`` says which (``"memory"``,
    ``"read-only"``, ``"disk"``); the message names the server and the fix. Every write
    would be refused alike, so it is no one episode's (or judge's) failure."""

    def __init__(self, message: str, cause: str) -> None:
        super().__init__(message)
        self.cause = cause


class RecordNotFoundError(StorageError, KeyError):
    """No record with that primary key (a ``KeyError``, so ``except KeyError`` works too)."""

    def __str__(self) -> str:
        # KeyError's own __str__ repr()s the message; ours is already a sentence.
        return str(self.args[0]) if self.args else ""


class EpisodeStateError(StorageError):
    """An episode operation that its current status forbids (e.g. restarting a complete one)."""


class EpisodeExistsError(EpisodeStateError):
    """An episode whose id is already stored: restored (imported) without ``replace``, or
    started again when it is complete (see :func:`already_played`)."""


def already_played(episode_id: str, location: str) -> str:
    """Why episode ``episode_id``, complete in the store at ``location``, is not played
    again, and the ways out."""
    return (
        f"episode {episode_id} is already stored, complete, in {location}. To play it "
        "again: leave episode_id out of the spec (each run then gets a fresh id), or "
        "replace the stored one (sa.run(..., replace=True)); for a batch, resume it "
        "(--resume, resume=True) or use a new tag"
    )


class StorageConflictError(StorageError):
    """A write kept losing to other writers of the same record and was given up (nothing
    of it was written)."""


class JsonlFormatError(StorageError, ValueError):
    """A JSONL line that is not a valid record; the message starts with ``source:line:``."""


class UnreadableRecordError(StorageError):
    """A key under the store's prefix that does not hold what the store writes there: a
    value of another type (a string where an episode hash belongs), fields that are no
    valid record, or an index entry naming a record that is not there.

    ``key`` is the Redis key and ``reason`` what is wrong with it; the message names both
    and the fix. Reading that one record raises it; listing reports it and goes on.
    """

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(
            f"unreadable key {key!r}: {reason}. Fix: it was not written by sotopia_are (or "
            f"was damaged); move it out of the way or delete it (redis-cli DEL {key!r})"
        )
        self.key = key
        self.reason = reason


class EmptySelectionError(SotopiaAreError, ValueError):
    """A listing, export or training file that would hold nothing: an empty result is
    not a success unless asked for (``allow_empty``, ``--allow-empty``). The message
    says what matched nothing, and why where it can tell."""
