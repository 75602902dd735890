"""Writing files so that a crash leaves the old file or the whole new one, never a part."""

from __future__ import annotations

import contextlib
import os
import tempfile

__all__ = ["write_text_atomically"]


def write_text_atomically(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``, creating its directory if needed.

    The text goes to a temporary file in the same directory (a rename across file systems
    would not be atomic), is flushed to disk, then renamed over ``path``. On any error the
    temporary file is removed, ``path`` is as it was, and the error is raised.
    """
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(
        dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp"
    )
    try:
        with open(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            # Without it a power loss after the rename can leave an empty file.
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
