"""An episode's export line (its record's JSON) put together from the bytes the store keeps.

Exporting an episode as JSONL writes ``EpisodeRecord.to_json()`` of its record as
:meth:`~sotopia_are.storage.EpisodeStore.load` reads it: the record rebuilt from its hash
and streams (validating every event and call) and serialised again, about 4 ms of CPU for
a 20-turn episode of 107 kB. Most of those bytes are already in the store exactly as that
JSON has them: each event and call entry is its model's ``model_dump_json()``. So the
store keeps, beside each finished episode's record, the rest of its export line, and marks
each stream entry written in that form; exporting then joins the stored texts instead of
rebuilding the record.

The joined line is the record's JSON byte for byte only when all of it is in the form of
the code exporting it, so the parts are used only when:

* the hash's :data:`~sotopia_are.storage.keys.EXPORTED_FIELD` was written by this form
  (:func:`export_form`: the record's JSON schema, the record version and pydantic-core's
  version) and the record's other fields are, byte for byte, those it was computed from
  (a digest of them), the two the event appends change (``updated_at``, ``event_count``)
  only checked to read back;
* every event and call entry carries :data:`FORM_FIELD` with this form: the store writes
  it on an entry that is its exact model's ``model_dump_json()`` (a call given as a
  mapping is stored as canonical JSON instead, and carries none).

Anything else — a record written by an older version (migrated on read), a running
episode, an edited or damaged field, an entry without the mark, a key of another type —
is exported the full way (:meth:`~sotopia_are.storage.EpisodeStore.load`), with
the same errors. Not detected: the bytes of a marked stream entry edited by hand (the
full way would find a broken one unreadable; this one copies it).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pydantic_core
from pydantic import PydanticUserError, TypeAdapter

from sotopia_are.llm import LLMCall
from sotopia_are.record import RECORD_VERSION, EpisodeRecord, Verdict
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage.episode_layout import (
    record_from_stored,
    reordered_on_read,
    verdicts_in_rubric_order,
)
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.fields import AsJsonText
from sotopia_are.storage.keys import EXPORTED_FIELD, SUMMARY_FIELD

__all__ = [
    "FORM_FIELD",
    "ExportHead",
    "entry_fields",
    "export_form",
    "export_line",
    "exported_parts",
    "exported_text",
    "utf8",
]

Payload = TypeVar("Payload", str, bytes)

FORM_FIELD = "form"
"""The stream-entry field, beside the payload, naming the :func:`export_form` in which the
payload was written; absent on an entry whose payload is not in that form."""

EXPORT_REVISION = 1
"""Count up when what the export line holds changes without the record's JSON schema
changing (how ``record_from_stored`` reads a stored record, a serializer): every stored
export part then stops matching, and episodes are exported the full way until rewritten."""

_CHANGED_BY_APPENDS = ("updated_at", "event_count")
"""The record fields the stream appends change in place (not in the digest)."""

_NOT_DIGESTED_NAMES = frozenset((*_CHANGED_BY_APPENDS, SUMMARY_FIELD, EXPORTED_FIELD))
_NOT_DIGESTED = frozenset(name.encode() for name in _NOT_DIGESTED_NAMES)
_EXPORTED, _FORM = EXPORTED_FIELD.encode(), FORM_FIELD.encode()


@functools.cache
def export_form() -> str | None:
    """The form of this code's export lines; None when a line cannot be joined from parts
    (the record's fields do not keep ``events`` and ``calls`` side by side, or it has no
    JSON schema to name its form by)."""
    fields = list(EpisodeRecord.model_fields)
    if fields[fields.index("events") + 1 : fields.index("events") + 2] != ["calls"]:
        return None
    try:
        schema = EpisodeRecord.model_json_schema(mode="serialization")
    except PydanticUserError:  # a field type without a JSON schema: no form to name
        return None
    described = json.dumps(
        [EXPORT_REVISION, RECORD_VERSION, pydantic_core.__version__, schema], sort_keys=True
    )
    return hashlib.sha256(described.encode()).hexdigest()[:16]


def entry_fields(field: str, payload: Payload, value: object) -> dict[str, str | Payload]:
    """The fields of the stream entry storing ``value`` (an event or call) as ``payload``:
    marked with :data:`FORM_FIELD` when ``payload`` is its exact model's
    ``model_dump_json()`` (as text, or its UTF-8 bytes), what the export line holds of it
    (a subclass would be exported as the declared model, a mapping is not that JSON)."""
    form = export_form()
    if form is None or type(value) not in (ExportedCompletedEvent, LLMCall):
        return {field: payload}
    return {field: payload, FORM_FIELD: form}


@functools.cache
def _parts_of_record() -> tuple[frozenset[str], frozenset[str]]:
    fields = list(EpisodeRecord.model_fields)
    events = fields.index("events")
    return frozenset(fields[:events]), frozenset(fields[events + 2 :])


def exported_text(log: EpisodeLog, written: Mapping[str, object]) -> str | bytes | None:
    """What :data:`~sotopia_are.storage.keys.EXPORTED_FIELD` holds for the record ``log``
    written as the hash fields ``written`` (``log.to_hash()``): the form, the digest of
    those fields, and the record's JSON before its events and after its calls, one a line
    (JSON text holds no newline). None when no line is joined for it: no form, a running
    episode (its streams still grow), the older layout (its record needs its streams), or
    a record that does not read (exporting it the full way says why). Text, or its UTF-8
    bytes when it was joined from ``written``'s bytes (see :func:`exported_parts`)."""
    return exported_parts(log, written)[0]


@dataclass(frozen=True)
class ExportHead:
    """The head of an export line (the record's JSON before its events) and what it was
    made from: ``texts``, the stored texts of the fields it is read from
    (:data:`_HEAD_FIELDS`), and ``record``, the record they read back as, without its
    verdicts and problems. A store keeps it from an episode's end to its verdict, whose
    export line has the same head. ``spec`` is the ``EpisodeLog.spec`` it was read from:
    that field is read as the log holds it, not from its text (canonical JSON, whose
    sorted keys could hide an order the record keeps), so it is matched by identity."""

    texts: tuple[str | None, ...]
    spec: object
    record: EpisodeRecord
    text: str


_HEAD_FIELDS = (
    "pk",
    "record_version",
    "spec",
    "agents",
    "models",
    "agent_sampling",
    "tag",
    "scenario_id",
    "status",
    "termination_reason",
    "error",
    "failed_agent",
    "turns_played",
)
"""The ``EpisodeLog`` fields a stored record is read from (``record_from_stored``) but
for ``verdicts`` and ``problems``, which make its export line's tail."""


def exported_parts(
    log: EpisodeLog,
    written: Mapping[str, object],
    head: ExportHead | None = None,
    verdicts: Sequence[Verdict] | None = None,
) -> tuple[str | bytes | None, ExportHead | None]:
    """:func:`exported_text` and the :class:`ExportHead` its head came from (None, None
    when there is no line). ``head``, when its texts are those of ``written``, is taken
    instead of reading the head's fields back again: the same texts (and the same spec)
    read back as the same record (the verdict a batch adds to an episode it just finished
    changes none of them). ``verdicts``, with such a head, are the validated verdicts
    ``log.verdicts`` was dumped from (``model_dump(mode="json")``, just now, by the
    caller): they are taken as reading that JSON back would give them, instead of
    validating it again. ``written``'s texts may be given as their UTF-8 bytes; the line
    is then joined as UTF-8 bytes when its tail is one of them (a verdict's 16 kB text is
    not encoded again to be sent, nor its line)."""
    form = export_form()
    if form is None or log.status is EpisodeStatus.RUNNING or log.record_version == 0:
        return None, None
    texts = tuple(
        None if (value := written.get(name)) is None else _as_stored(value) for name in _HEAD_FIELDS
    )
    head_fields, tail_fields = _parts_of_record()
    tail: str | bytes | None = None
    if head is not None and head.texts == texts and head.spec is log.spec:
        if verdicts is not None:
            tail = _tail_as_written(log, written, verdicts)
        if tail is None:
            try:
                # The whole record validated, its head fields as the head's record read
                # them (validated models are kept as they are), its tail as read back.
                fields = {name: getattr(head.record, name) for name in EpisodeRecord.model_fields}
                tail_read = {
                    name: _read_back_field(log, written, name)
                    for name in _TAIL
                    if name != "verdicts" or verdicts is None
                }
                if verdicts is not None:
                    # Validated models dumped as JSON validate back to models that dump
                    # the same (pydantic's round trip; the store reads the text it writes
                    # of that JSON back as that JSON). What reading back may change
                    # besides, the order of a verdict's dimensions, verdicts_in_rubric_order
                    # changes below alike. Validating the verdicts again (the judge's
                    # calls, the whole transcript) was most of a batch's verdict step.
                    tail_read["verdicts"] = tuple(verdicts)
                record = verdicts_in_rubric_order(
                    EpisodeRecord.model_validate({**fields, **tail_read})
                )
            except (ValueError, RecursionError):  # load_record's RecordFormatError for the latter
                return None, None
            tail = record.model_dump_json(include=set(tail_fields))
    else:
        try:
            record = record_from_stored(_read_back(log, written), (), ())
        except ValueError:
            return None, None
        # Its head fields read back as they did without its tail (read field by field).
        without_tail = record.model_copy(update=dict.fromkeys(_TAIL, ()))
        head_text = record.model_dump_json(include=set(head_fields))
        head = ExportHead(texts, log.spec, without_tail, head_text)
        tail = record.model_dump_json(include=set(tail_fields))
    digest = _digest_of_texts(written)
    if isinstance(tail, bytes):
        return b"\n".join((form.encode(), digest.encode(), utf8(head.text)[:-1], tail[1:])), head
    return "\n".join((form, digest, head.text[:-1], tail[1:])), head


def _tail_as_written(
    log: EpisodeLog, written: Mapping[str, object], verdicts: Sequence[Verdict]
) -> bytes | None:
    """The export line's tail (the record's JSON after its calls) joined from the text
    written of ``log.verdicts`` (``dumps_ordered`` of their ``model_dump(mode="json")``,
    ``verdicts`` the validated models it was dumped from), or None when it may not be
    the tail reading the record back writes. That record's verdicts dump as ``verdicts``
    do (see :func:`exported_parts`), and a model's ``model_dump_json`` is
    ``model_dump(mode="json")`` written as JSON, but for a non-finite float (``NaN``
    there, ``null`` here): taken only when the text holds no such constant, reading back
    reorders no dimension, and there are no problems (``[]``). Serialising the verdicts
    again (16 kB with the judge's calls) and validating the record for it was most of
    what a batch's verdict step spent on its export line. As UTF-8 bytes."""
    text = written.get("verdicts")
    if not isinstance(text, str | bytes):
        return None
    data = utf8(text)
    if (
        log.problems
        or not _tail_is_verdicts_and_problems()
        or b"NaN" in data
        or b"Infinity" in data
        or reordered_on_read(verdicts)
    ):
        return None
    return b'{"verdicts":' + data + b',"problems":[]}'


_TAIL = ("verdicts", "problems")
"""The ``EpisodeLog`` fields that make an export line's tail (as the record's fields of
the same names)."""


@functools.cache
def _tail_is_verdicts_and_problems() -> bool:
    """Whether the record's fields after ``calls`` are :data:`_TAIL`, in that order."""
    fields = list(EpisodeRecord.model_fields)
    return fields[fields.index("calls") + 1 :] == list(_TAIL)


def _read_back(log: EpisodeLog, written: Mapping[str, object]) -> EpisodeLog:
    """``log`` as reading its hash gives it back, in the fields its record is read from
    (:data:`_HEAD_FIELDS` and :data:`_TAIL`; the others are left as they are): its
    JSON-text fields parsed from the text written (canonical JSON sorts the keys of their
    mappings, which reading keeps, so the record read back serialises them sorted); the
    rest reads back as it is."""
    read_back: EpisodeLog = log.model_copy(
        update={name: _read_back_field(log, written, name) for name in _read_for_record()}
    )
    return read_back


@functools.cache
def _read_for_record() -> frozenset[str]:
    """The JSON-text fields a stored record is read from whose text may reorder keys."""
    return _reordered_fields() & {*_HEAD_FIELDS, *_TAIL}


def _read_back_field(log: EpisodeLog, written: Mapping[str, object], name: str) -> Any:
    """Field ``name`` of ``log`` as reading its hash gives it back (see :func:`_read_back`).
    Only the JSON text written with sorted keys is parsed: an ordered field's text is the
    dump of the value itself, keys in their order, which parsing gives back (as JSON, the
    value a field of JSON text holds)."""
    if name in _reordered_fields() and name in written:
        value = written[name]
        return json.loads(value if isinstance(value, str | bytes) else str(value))
    return getattr(log, name)


@functools.cache
def _reordered_fields() -> frozenset[str]:
    """The ``EpisodeLog`` fields written as canonical JSON text (keys sorted)."""
    return frozenset(
        name
        for name, field in EpisodeLog.model_fields.items()
        if any(isinstance(marker, AsJsonText) and not marker.ordered for marker in field.metadata)
    )


def export_line(
    fields: Mapping[bytes, bytes] | Sequence[bytes],
    events: Sequence[Any],
    calls: Sequence[Any],
    *,
    entry_names: tuple[str, str],
) -> bytes | None:
    """The export line (UTF-8, without its newline) joined from an episode's HGETALL and
    its two streams' XRANGE replies as the server sends them, read undecoded and without
    redis-py's response callbacks: the hash a mapping (RESP3) or a flat list of names and
    values (RESP2), each stream entry ``[id, [name, value, ...]]`` (``entry_names``: the
    fields of an event entry and a call entry holding the payload). None when it must be
    exported the full way (see the module doc)."""
    if not isinstance(fields, Mapping):
        pairs = iter(fields)
        fields = dict(zip(pairs, pairs, strict=False))
    text = fields.get(_EXPORTED)
    form = _form_bytes()
    if text is None or form is None:
        return None
    # The four parts are split off the front: the tail (a verdict's 16 kB) is not
    # scanned by the split, only searched for a newline no JSON text holds.
    parts = text.split(b"\n", 3)
    if (
        len(parts) != 4
        or parts[0] != form
        or b"\n" in parts[3]
        or parts[1] != _digest(fields).encode()
    ):
        return None
    try:
        for name in _CHANGED_BY_APPENDS:
            if (value := fields.get(name.encode())) is not None:
                _checks()[name].validate_python(value.decode())
    except (pydantic_core.ValidationError, UnicodeDecodeError):
        return None
    event_field, call_field = (name.encode() for name in entry_names)
    event_texts = _marked(events, event_field, form)
    call_texts = _marked(calls, call_field, form)
    if event_texts is None or call_texts is None:
        return None
    # One join of every part: the payloads are copied once.
    return b"".join(
        (parts[2], b',"events":[', *event_texts, b'],"calls":[', *call_texts, b"],", parts[3])
    )


def _marked(entries: Sequence[Any], field: bytes, form: bytes) -> list[bytes] | None:
    """The payloads of XRANGE ``entries`` (``[id, [name, value, ...]]`` each), comma
    separated, when every entry's fields are ``field`` (the payload) and
    :data:`FORM_FIELD` (``form``), in either order; else None."""
    payloads: list[bytes] = []
    for _, values in entries:
        if len(values) != 4:
            return None
        first, payload, second, mark = values
        if first == _FORM and second == field:
            payload, mark = mark, payload
        elif first != field or second != _FORM:
            return None
        if mark != form:
            return None
        payloads += (b",", payload)
    return payloads[1:]


@functools.cache
def _form_bytes() -> bytes | None:
    """:func:`export_form` as the store keeps it (UTF-8)."""
    form = export_form()
    return None if form is None else form.encode()


@functools.cache
def _checks() -> dict[str, TypeAdapter[Any]]:
    """How reading the record validates each field the appends change."""
    return {
        name: TypeAdapter(EpisodeLog.model_fields[name].annotation) for name in _CHANGED_BY_APPENDS
    }


def _as_stored(value: object) -> str:
    """A hash field's value as Redis keeps it: redis-py writes numbers as their repr."""
    return value if isinstance(value, str) else repr(value)


def utf8(text: str | bytes) -> bytes:
    """A stored text as Redis keeps it: ``text`` UTF-8 encoded (bytes are taken as such)."""
    return text if isinstance(text, bytes) else text.encode()


def _digest(fields: Mapping[bytes, bytes]) -> str:
    """A digest of the record's hash fields as stored (those the appends change, the
    listed summary and the export parts left out), whatever their order."""
    return _sha1_of((name, fields[name]) for name in sorted(fields.keys() - _NOT_DIGESTED))


def _digest_of_texts(written: Mapping[str, object]) -> str:
    """:func:`_digest` of the hash fields ``written`` (as the store sends them: text, its
    UTF-8 bytes, or numbers written as their ``repr``), encoded as Redis keeps them (UTF-8
    keeps the order of the names' code points)."""
    return _sha1_of(
        (name.encode(), _stored_utf8(written[name]))
        for name in sorted(written.keys() - _NOT_DIGESTED_NAMES)
    )


def _stored_utf8(value: object) -> bytes:
    """A field's value as Redis keeps it: bytes as they are, text UTF-8 encoded, a number
    as its ``repr``."""
    return value if isinstance(value, bytes) else _as_stored(value).encode()


def _sha1_of(fields: Iterable[tuple[bytes, bytes]]) -> str:
    """The SHA-1 of ``fields``' names and values, each framed by its length, hashed at
    once; a value is not formatted into its frame (that would copy it: a verdict's text
    is 16 kB)."""
    parts: list[bytes] = []
    for name, value in fields:
        parts += (b"%d:%s%d:" % (len(name), name, len(value)), value)
    return hashlib.sha1(b"".join(parts), usedforsecurity=False).hexdigest()
