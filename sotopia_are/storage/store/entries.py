"""Reading back what the store wrote, and the calls-stream entries.

An episode's hash and streams are read with these: a key holding another Redis type,
or fields and entries the store did not write, are an :class:`UnreadableRecordError`
naming the key, never a crash deep inside a listing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import redis
from pydantic import ValidationError

from sotopia_are.llm import LLMCall
from sotopia_are.storage.call_json import call_json
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.errors import UnreadableRecordError
from sotopia_are.storage.exported import entry_fields
from sotopia_are.storage.fields import dumps_canonical
from sotopia_are.storage.stored_model import StoredModel

__all__ = [
    "CALL_FIELD",
    "SCAN_BATCH",
    "CallData",
    "call_entries",
    "decode_call",
    "decode_entries",
    "entry_args",
    "from_hash",
    "read_episode",
    "read_hash",
    "read_stream",
    "type_of",
    "wrong_type",
]

SCAN_BATCH = 500
"""How many keys one SCAN step or one pipelined read takes."""

R = TypeVar("R", bound=StoredModel)

CallData = Mapping[str, Any] | LLMCall
"""A model call record as the store takes it: an ``LLMCall``, or its JSON data
(``LLMCall.model_dump(mode="json")``)."""
T = TypeVar("T")

CALL_FIELD = "call"
"""The field of a calls-stream entry holding the call record's JSON."""


def call_entries(calls: Iterable[CallData]) -> list[dict[str, str | bytes]]:
    """Call records as calls-stream entries (an ``LLMCall`` as its JSON, marked as the
    export line holds it; a mapping as canonical JSON); ``TypeError``/``ValueError`` if
    one is not JSON-serialisable."""
    # An LLMCall's JSON stays the UTF-8 bytes Redis keeps (about 4 kB a call, 20 calls an
    # episode), never decoded to text that sending would encode again.
    return [
        entry_fields(CALL_FIELD, call_json(call), call)
        if isinstance(call, LLMCall)
        else {CALL_FIELD: dumps_canonical(call)}
        for call in calls
    ]


_SAME_SHAPE = "="
"""The count of an entry :func:`entry_args` sends as its payload alone."""


def entry_args(
    entry: Mapping[str, str | bytes], previous: Mapping[str, str | bytes] | None, mark: str = ""
) -> list[str | bytes]:
    """Stream ``entry`` as the store's scripts take it after ``previous`` (the entry sent
    just before it in the same script call, if any): how many texts it has, then those
    texts (field, value, field, value...); or, when it has the previous entry's fields
    and all its values but the first (the payload: an event or a call, the rest their
    form), ``=`` and its payload alone. ``mark`` goes before the count (or ``=``): a
    script's word on the entry, sent in the same argument. Each argument costs the client
    a few microseconds to send, and a batch sends an episode's 20 events and 20 calls."""
    if previous is not None and len(entry) == len(previous) and len(entry) > 0:
        first, *rest = entry.items()
        before, *others = previous.items()
        if first[0] == before[0] and rest == others:
            return [mark + _SAME_SHAPE, first[1]]
    texts = [part for pair in entry.items() for part in pair]
    return [mark + str(len(texts)), *texts]


def decode_call(payload: str) -> dict[str, Any]:
    call = json.loads(payload)
    if not isinstance(call, dict):
        raise ValueError(f"a call record is a JSON object, not {type(call).__name__}")
    return call


def wrong_type(
    client: Any, key: str, expected: str, error: redis.ResponseError
) -> UnreadableRecordError | redis.ResponseError:
    """The error to raise for ``error`` from reading ``key`` (expected to be a Redis
    ``expected``): :class:`UnreadableRecordError` naming the type it holds for WRONGTYPE,
    anything else unchanged."""
    if "WRONGTYPE" not in str(error):
        return error
    return UnreadableRecordError(key, f"holds a {type_of(client, key)}, not a {expected}")


def type_of(client: Any, key: str) -> str:
    """The Redis type of ``key`` (``none`` if absent)."""
    return str(client.type(key))


def read_hash(client: Any, key: str) -> dict[str, str]:
    """HGETALL ``key`` (on a client, or a pipeline in immediate mode); {} if absent,
    :class:`UnreadableRecordError` if it holds another type."""
    try:
        fields: dict[str, str] = client.hgetall(key)
    except redis.ResponseError as error:
        raise wrong_type(client, key, "hash", error) from None
    return fields


def from_hash(model: type[R], pk: str, fields: Mapping[str, str]) -> R:
    """``model.from_hash``, with fields that are no valid record an
    :class:`UnreadableRecordError` naming the key."""
    try:
        return model.from_hash(pk, fields)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or '(root)'}: {item['msg']}"
            for item in error.errors()[:3]
        )
        raise UnreadableRecordError(
            model.redis_key(pk), f"its fields are no valid {model.__name__} ({problems})"
        ) from None


def read_stream(client: Any, key: str, field: str, decode: Callable[[str], T]) -> list[T]:
    """The ``field`` of every entry of stream ``key``, decoded (on a client, or a pipeline
    in immediate mode); :class:`UnreadableRecordError` naming the key if it holds
    anything the store did not write."""
    try:
        entries = client.xrange(key)
    except redis.ResponseError as error:
        raise wrong_type(client, key, "stream", error) from None
    return decode_entries(key, entries, field, decode)


def decode_entries(
    key: str,
    entries: Iterable[tuple[str, Mapping[str, str]]],
    field: str,
    decode: Callable[[str], T],
) -> list[T]:
    """The ``field`` of each entry of stream ``key`` (an XRANGE reply), decoded;
    :class:`UnreadableRecordError` naming the key for an entry the store did not write."""
    try:
        return [decode(fields[field]) for _, fields in entries]
    except (KeyError, ValueError) as error:
        raise UnreadableRecordError(
            key, f"holds an entry that is not one the store wrote ({error!r:.200})"
        ) from None


def read_episode(pipe: Any, episode_id: str) -> EpisodeLog | None:
    """The stored episode (None if absent), read inside a write's WATCH;
    :class:`UnreadableRecordError` if its key holds no valid episode."""
    fields = read_hash(pipe, EpisodeLog.redis_key(episode_id))
    return from_hash(EpisodeLog, episode_id, fields) if fields else None
