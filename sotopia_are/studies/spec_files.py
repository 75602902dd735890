"""`read_specs`: the episode specs of spec files (JSON, JSONL, or a directory of them).

A bad spec is named by its file (and line, or list index) with what is wrong in it, so a
study's input is fixed before any episode is played.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from sotopia_are.simulation.data_handler.reader import loads_json
from sotopia_are.social import EpisodeSpec

from .errors import StudyInputError

__all__ = ["read_specs"]


def read_specs(path: Path) -> list[EpisodeSpec]:
    """The specs in ``path``: a JSONL file (one spec a line), a JSON file (a spec or a list
    of specs), or a directory of such files (``*.json``, ``*.jsonl``, not recursive).
    :class:`StudyInputError` naming the file (and line) of anything that is not a valid
    spec; ``OSError`` for an unreadable file."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())
        if not files:
            raise StudyInputError(f"{path} holds no .json or .jsonl spec files")
        return [spec for file in files for spec in read_specs(file)]
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        items = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
        return [_spec(f"{path}:{number}", line) for number, line in items]
    try:
        data = loads_json(text)
    except json.JSONDecodeError as error:
        raise StudyInputError(f"{path}: not JSON: {error}") from None
    if isinstance(data, list):
        return [_spec(f"{path}[{index}]", json.dumps(item)) for index, item in enumerate(data)]
    return [_spec(str(path), text)]


def _spec(where: str, text: str) -> EpisodeSpec:
    try:
        return EpisodeSpec.model_validate_json(text)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in error.errors()
        )
        raise StudyInputError(f"{where}: not a valid episode spec: {problems}") from None
