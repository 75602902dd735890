"""Episodes and profiles in and out of the store as files.

:func:`import_file` takes what users have: JSONL of episode records (or the stored-episode
documents older versions exported), JSONL of profiles (SOTOPIA's own files too), or one
episode's ARE scenario JSON. :func:`export_are_files` writes one ARE file per episode
into a directory, all placed inside it before any is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from sotopia_are.messages import parse_script_notes
from sotopia_are.record import checked_import, record_from_are_json
from sotopia_are.simulation.data_handler.reader import loads_json
from sotopia_are.simulation.files import open_atomically, path_inside, write_text_atomically
from sotopia_are.social import import_episode
from sotopia_are.storage import (
    AgentProfile,
    EmptySelectionError,
    EnvironmentProfile,
    EpisodeStore,
    RecordNotFoundError,
    RelationshipProfile,
    StoredModel,
    UnreadableRecordError,
    export_episode_json,
    export_episodes,
    import_episodes,
    import_records,
)

from .errors import StudyInputError
from .flags import ExportFormat, ImportKind
from .rating import script_record
from .script_context import script_context

__all__ = [
    "ExportFormat",
    "ImportKind",
    "ImportedFile",
    "export_are_file",
    "export_are_files",
    "export_text",
    "export_to",
    "import_file",
    "selected_episodes",
    "write_text_atomically",
]


_PROFILE_MODELS: dict[ImportKind, type[StoredModel]] = {
    ImportKind.agents: AgentProfile,
    ImportKind.environments: EnvironmentProfile,
    ImportKind.relationships: RelationshipProfile,
}


@dataclass(frozen=True)
class ImportedFile:
    """What :func:`import_file` stored: the kind, the ids, whether it was ARE JSON, for
    a script the parser's warnings (``warning: line N: …``: a cue it could not read), and
    the episodes kept flagged by a lenient import, with their problems."""

    kind: ImportKind
    ids: tuple[str, ...]
    are: bool = False
    warnings: tuple[str, ...] = ()
    flagged: tuple[tuple[str, tuple[str, ...]], ...] = ()


def import_file(
    store: EpisodeStore,
    path: Path,
    *,
    kind: ImportKind = ImportKind.auto,
    replace: bool = False,
    context: str | None = None,
    lenient: bool = False,
) -> ImportedFile:
    """Store what ``path`` holds. A file with a bad line (``ValueError`` naming the line)
    imports nothing; nor does one with an episode id already stored
    (:class:`~sotopia_are.storage.EpisodeExistsError`), unless ``replace``. An episode
    keeps the status it was exported with (an ARE file that does not say is complete).
    An episode no run could have produced (scores out of range, actions by
    non-participants, a status its events disagree with: see
    :func:`~sotopia_are.record.record_problems`) is a ``ValueError`` naming the field,
    unless ``lenient``, which stores it flagged (:attr:`EpisodeRecord.problems`).
    ``OSError`` for an unreadable file. A ``script`` (never guessed: ask for it) is a
    human-written script, played through the engine and stored unrated, tagged
    ``script``; its context is ``context`` (episode spec or background JSON) or its own
    preamble (see :func:`~sotopia_are.studies.script_context`)."""
    text = path.read_text(encoding="utf-8")
    if kind is ImportKind.script:
        spec = script_context(text, context, episode_id=path.stem)
        record = asyncio.run(script_record(text, spec, episode_id=path.stem))
        store.save_record(record.model_copy(update={"tag": "script"}), replace=replace)
        warnings = parse_script_notes(text, spec.agent_names).warnings
        return ImportedFile(kind, (record.episode_id,), warnings=tuple(map(str, warnings)))
    if _is_are_trace(text):
        record = record_from_are_json(text, reason=f"imported from ARE JSON {path.name}")
        record = checked_import(record, lenient=lenient)
        store.save_record(record, replace=replace)
        flagged: tuple[tuple[str, tuple[str, ...]], ...] = (
            ((record.episode_id, record.problems),) if record.problems else ()
        )
        return ImportedFile(ImportKind.episodes, (record.episode_id,), are=True, flagged=flagged)
    lines = text.splitlines()
    if kind is ImportKind.auto:
        kind = _kind_of(lines, path)
    if kind is ImportKind.episodes:
        ids = import_episodes(store, lines, source=str(path), replace=replace, lenient=lenient)
        problems = {pk: store.get_episode(pk).problems for pk in ids} if lenient else {}
        kept = tuple((pk, tuple(found)) for pk, found in problems.items() if found)
        return ImportedFile(kind, tuple(ids), flagged=kept)
    ids = import_records(store, _PROFILE_MODELS[kind], lines, source=str(path))
    return ImportedFile(kind, tuple(ids))


def _kind_of(lines: Sequence[str], path: Path) -> ImportKind:
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        raise StudyInputError(f"{path} is empty")
    try:
        data: Any = loads_json(first)
    except json.JSONDecodeError as error:
        raise StudyInputError(f"{path}:1: not JSON: {error}") from None
    if not isinstance(data, dict):
        raise StudyInputError(f"{path}:1: expected a JSON object")
    if {"version", "events", "agents", "status"} & data.keys():
        return ImportKind.episodes
    if "first_name" in data:
        return ImportKind.agents
    if "agent_goals" in data or "scenario" in data:
        return ImportKind.environments
    if {"agent_1_id", "agent1_id"} & data.keys():
        return ImportKind.relationships
    raise StudyInputError(
        f"cannot tell what {path} holds; give its kind (--kind "
        "episodes|agents|environments|relationships)"
    )


def _is_are_trace(text: str) -> bool:
    """Whether ``text`` is one ARE ``ExportedTrace`` object rather than JSONL records."""
    try:
        data = loads_json(text)
    except json.JSONDecodeError:
        return False  # several lines of JSON: JSONL
    return isinstance(data, dict) and "completed_events" in data and "metadata" in data


def export_are_files(store: EpisodeStore, episode_ids: Sequence[str], directory: Path) -> int:
    """Write each episode's ARE JSON to ``directory/<id>.json``; how many.

    Every path is resolved inside ``directory`` first (:class:`StudyInputError` for one
    that would land outside); each episode is then read and written to a temporary file
    in turn (one held at a time), and only when all are written are they renamed over
    their targets, so a store error or a bad id leaves no partial set of files.
    """
    targets = [_file_of(directory, pk) for pk in episode_ids]
    written: list[tuple[str, str]] = []
    try:
        for pk, target in zip(episode_ids, targets, strict=True):
            text = export_episode_json(store, pk, indent=2)
            with open_atomically(target, rename=False) as handle:
                handle.write(text)
            written.append((handle.name, target))
    except BaseException:
        for temporary, _ in written:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        raise
    for temporary, target in written:
        os.replace(temporary, target)
    return len({target for _, target in written})


def export_are_file(store: EpisodeStore, episode_id: str, path: Path) -> int:
    """Write one episode's ARE JSON to ``path`` (whole: a temporary file renamed over the
    target) and import the file back as a check; how many completed events it holds.
    :class:`~sotopia_are.studies.errors.ScenarioFormatError` if it does not import back."""
    text = export_episode_json(store, episode_id, indent=2)
    write_text_atomically(str(path), text + "\n")
    return len(import_episode(path.read_text(encoding="utf-8")).events)


def _file_of(directory: Path, episode_id: str) -> str:
    """The ARE JSON file of ``episode_id`` in ``directory``; :class:`StudyInputError` for an
    id (stored before ids were checked) that would put it elsewhere."""
    try:
        return path_inside(str(directory), f"{episode_id}.json")
    except ValueError as error:
        raise StudyInputError(str(error)) from None


def selected_episodes(
    store: EpisodeStore, *, tag: str | None = None, allow_empty: bool = False
) -> list[str]:
    """The ids of every stored episode (with ``tag``, if given), oldest first.

    ``ValueError`` naming every stored key that is not a readable episode, so that an
    export never silently misses one. Unless ``allow_empty``, none is an error:
    ``RecordNotFoundError`` for a ``tag`` no episode has,
    :class:`~sotopia_are.storage.EmptySelectionError` for an empty store.
    """
    skipped: list[UnreadableRecordError] = []
    ids = store.episode_ids(tag=tag, on_unreadable=skipped.append)
    if skipped:
        raise StudyInputError(
            f"{len(skipped)} stored keys are not readable episodes, nothing was exported: "
            + "; ".join(f"{e.key} ({e.reason})" for e in skipped)
            + ". Fix: move them out of the way or delete them, or export episodes by id"
        )
    if ids or allow_empty:
        return ids
    if tag is not None:
        raise RecordNotFoundError(f"no episodes tagged {tag!r} in {store.location}")
    raise EmptySelectionError(f"no episodes in {store.location}: nothing to export")


def export_to(
    store: EpisodeStore,
    episode_ids: Sequence[str],
    form: ExportFormat,
    output: Path | None,
    *,
    stdout: TextIO | None = None,
) -> int:
    """Write the episodes as :func:`export_text` gives them, each as soon as it is read
    (a few held at once, however many): to ``output``, whole or not at all (a temporary
    file renamed over it at the end), or with ``output`` None or ``-`` to ``stdout``
    (default: ``sys.stdout``), where an error stops the lines part way. How many."""
    if form is not ExportFormat.jsonl and len(episode_ids) != 1:
        raise StudyInputError("episodes as ARE JSON are one file each: give a directory")
    with contextlib.ExitStack() as stack:
        if output is None or str(output) == "-":
            out = stdout or sys.stdout
        else:
            out = stack.enter_context(open_atomically(str(output)))
        if form is ExportFormat.jsonl:
            count = export_episodes(store, out, episode_ids)
        else:
            out.write(export_episode_json(store, episode_ids[0], indent=2) + "\n")
            count = 1
    return count


def export_text(store: EpisodeStore, episode_ids: Sequence[str], form: ExportFormat) -> str:
    """The episodes as one text: JSONL records, or the ARE JSON of the one episode given
    (``ValueError`` for several: ARE JSON is one file each, see
    :func:`export_are_files`)."""
    if form is ExportFormat.jsonl:
        out = io.StringIO()
        export_episodes(store, out, episode_ids)
        return out.getvalue()
    if len(episode_ids) != 1:
        raise StudyInputError("episodes as ARE JSON are one file each: give a directory")
    return export_episode_json(store, episode_ids[0], indent=2) + "\n"
