"""Profiles and episodes to and from JSONL (one JSON object a line).

Profiles are written as their documents (``StoredModel.to_document``). Reading accepts
those and SOTOPIA's profile files as users have them (the ``sotopia-space`` JSONL files
and records of Sotopia's Redis dump), tolerating their quirks: ``agent_id``/``env_id``/
``relationship_id`` for ``pk``, ``agent1_id`` for ``agent_1_id``, ``"3"`` for 3, list
items with stray spaces or holding a stringified list (``["['Liberty']"]``),
``agent_constraint`` as ``"none"`` or a Python literal, and Sotopia's single ``tag``.

An episode line is its :class:`~sotopia_are.record.EpisodeRecord` as JSON (``version``
first), so an exported episode imports whole into another store; reading also takes the
stored-episode documents older versions exported (``pk``, ``events``, ``calls``…).

Every bad line raises :class:`JsonlFormatError` naming the source and line, before
anything of that input is written.
"""

from __future__ import annotations

import ast
import codecs
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any, BinaryIO, TextIO, TypeVar, cast

from pydantic import ValidationError

from sotopia_are.record import EpisodeRecord, RecordCheckError, checked_import, load_record
from sotopia_are.simulation.data_handler.reader import loads_json
from sotopia_are.social.spec import check_safe_id
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.errors import EpisodeExistsError, JsonlFormatError
from sotopia_are.storage.fields import dumps_canonical
from sotopia_are.storage.profiles import AgentProfile, EnvironmentProfile, RelationshipProfile
from sotopia_are.storage.store import EpisodeStore
from sotopia_are.storage.stored_model import StoredModel

__all__ = [
    "export_episodes",
    "export_records",
    "import_episodes",
    "import_records",
    "read_records",
    "write_records",
]

R = TypeVar("R", bound=StoredModel)

_ID_ALIASES = ("agent_id", "env_id", "relationship_id")
_FIELD_ALIASES = {"agent1_id": "agent_1_id", "agent2_id": "agent_2_id"}
_LIST_FIELDS = ("moral_values", "schwartz_personal_values")


def write_records(records: Iterable[StoredModel], out: TextIO) -> int:
    """Write each record's document as one line; returns how many."""
    count = 0
    for record in records:
        out.write(dumps_canonical(record.to_document()) + "\n")
        count += 1
    return count


def read_records(model: type[R], lines: Iterable[str], *, source: str = "<input>") -> list[R]:
    """The records of ``model`` in ``lines`` (ours or SOTOPIA's; blank lines skipped).
    A ``pk`` outside :data:`~sotopia_are.social.spec.SAFE_ID_CHARACTERS` is a bad line."""
    records = []
    for number, data in _objects(lines, source):
        try:
            document = _normalise(model, data)
            if "pk" in document:
                check_safe_id(str(document["pk"]), "pk")
            records.append(model.from_document(document))
        except (ValidationError, ValueError) as error:
            raise JsonlFormatError(
                f"{source}:{number}: not a valid {model.__name__}: {error}"
            ) from None
    return records


def export_records(store: EpisodeStore, model: type[StoredModel], out: TextIO) -> int:
    """Write every stored record of ``model``; returns how many."""
    return write_records(store.all(model), out)


def import_records(
    store: EpisodeStore, model: type[StoredModel], lines: Iterable[str], *, source: str = "<input>"
) -> list[str]:
    """Store the records of ``model`` in ``lines`` (all or, on a bad line, none); their pks."""
    records = read_records(model, lines, source=source)
    store.save_all(records)
    return [record.pk for record in records]


def export_episodes(
    store: EpisodeStore, out: TextIO, episode_ids: Iterable[str] | None = None
) -> int:
    """Write the episodes (default: all, oldest first) as episode records, one a line
    (``version`` first; see :class:`~sotopia_are.record.EpisodeRecord`), each written as
    soon as it is read (a few episodes are held at once, however many are exported):
    what :meth:`~sotopia_are.storage.EpisodeStore.iter_export_lines` gives.
    ``ValueError`` for an episode stored without a spec (it cannot be a record)."""
    count = 0
    ids = store.episode_ids() if episode_ids is None else episode_ids
    binary = _utf8_buffer(out)
    for line in store.iter_export_lines(ids):
        if binary is not None:
            binary.write(line)
            binary.write(b"\n")
        else:
            out.write(line.decode())
            out.write("\n")
        count += 1
    if binary is not None:
        binary.flush()
    return count


def _utf8_buffer(out: TextIO) -> BinaryIO | None:
    """The binary file under ``out`` when writing UTF-8 bytes there is what writing the
    text would write (a UTF-8 text file whose newlines are not translated), with what was
    written as text so far flushed to it; else None."""
    buffer = getattr(out, "buffer", None)
    encoding = codecs.lookup(getattr(out, "encoding", None) or "ascii").name
    if buffer is None or encoding != "utf-8" or os.linesep != "\n":
        return None
    out.flush()
    return cast(BinaryIO, buffer)


def import_episodes(
    store: EpisodeStore,
    lines: Iterable[str],
    *,
    source: str = "<input>",
    replace: bool = False,
    lenient: bool = False,
) -> list[str]:
    """Store the episode records in ``lines`` (and stored-episode documents of an older
    sotopia_are, migrated); their ids.

    Every line is checked before the first episode is written: a bad line is a
    :class:`JsonlFormatError` (a record of a newer version says to upgrade), and so is a
    record no run could have produced (see :func:`~sotopia_are.record.record_problems`:
    the message names each field) unless ``lenient``, which keeps it flagged with its
    problems; an id given twice or (without ``replace``) already stored is an
    :class:`EpisodeExistsError` naming the ids; either way nothing is written. With
    ``replace``, stored episodes with those ids are overwritten.
    """
    records: list[EpisodeRecord] = []
    for number, data in _objects(lines, source):
        try:
            records.append(checked_import(load_record(data), lenient=lenient))
        except RecordCheckError as error:
            raise JsonlFormatError(f"{source}:{number}: {error}") from None
        except (ValidationError, ValueError, TypeError) as error:
            raise JsonlFormatError(f"{source}:{number}: not a valid episode: {error}") from None
    ids = [record.episode_id for record in records]
    twice = sorted({pk for pk in ids if ids.count(pk) > 1})
    if twice:
        raise EpisodeExistsError(
            f"{source}: episode {', '.join(twice)} appears more than once; nothing was imported"
        )
    if not replace:
        existing = [pk for pk in ids if store.exists(EpisodeLog, pk)]
        if existing:
            raise EpisodeExistsError(
                f"episode {', '.join(existing)} already exists in {store.location}; "
                "nothing was imported"
            )
    for record in records:
        store.save_record(record, replace=replace)
    return ids


def _objects(lines: Iterable[str], source: str) -> Iterable[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = loads_json(line)
        except json.JSONDecodeError as error:
            raise JsonlFormatError(f"{source}:{number}: not JSON: {error}") from None
        if not isinstance(data, dict):
            raise JsonlFormatError(f"{source}:{number}: expected a JSON object")
        yield number, data


def _normalise(model: type[StoredModel], data: Mapping[str, Any]) -> dict[str, Any]:
    """SOTOPIA's spellings and quirks turned into our fields (ours pass unchanged)."""
    record = {_FIELD_ALIASES.get(key, key): value for key, value in data.items()}
    for alias in _ID_ALIASES:
        if alias in record:
            record.setdefault("pk", record.pop(alias))
    if model is AgentProfile:
        for field in _LIST_FIELDS:
            if isinstance(record.get(field), list):
                record[field] = _flat_strings(record[field])
    if model is EnvironmentProfile:
        if "tag" in record:
            tag = record.pop("tag")
            record.setdefault("tags", [tag] if tag else [])
        if isinstance(record.get("agent_constraint"), str):
            record["agent_constraint"] = _literal_or_none(record["agent_constraint"])
    if model in (EnvironmentProfile, RelationshipProfile) and isinstance(
        record.get("relationship"), str
    ):
        record["relationship"] = int(record["relationship"])
    return record


def _flat_strings(items: list[Any]) -> list[str]:
    """``["Care", " Fairness"]`` and ``["['Liberty']"]`` both become clean string lists."""
    flat: list[str] = []
    for item in items:
        if isinstance(item, str) and item.strip().startswith("["):
            inner = _literal_or_none(item)
            flat.extend(str(x).strip() for x in inner or [])
        else:
            flat.append(str(item).strip())
    return flat


def _literal_or_none(text: str) -> Any:
    """A Python literal written as text (SOTOPIA's ``"none"`` and ``"nan"`` mean None)."""
    if text.strip().lower() in ("", "none", "nan", "null"):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError(f"cannot read {text!r} as a Python literal") from None
