"""Writing files so that a crash leaves the old file or the whole new one, never a part."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import TextIO

__all__ = ["NEW_FILE_MODE", "open_atomically", "path_inside", "write_text_atomically"]

NEW_FILE_MODE = 0o644


def write_text_atomically(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``, creating its directory if needed.

    A new file gets mode ``NEW_FILE_MODE`` (0644); a replaced one keeps its mode.
    The text goes to a temporary file in the same directory (a rename across file systems
    would not be atomic), is flushed to disk, then renamed over ``path``. On any error the
    temporary file is removed, ``path`` is as it was, and the error is raised.
    """
    with open_atomically(path) as handle:
        handle.write(text)


@contextlib.contextmanager
def open_atomically(path: str, *, rename: bool = True) -> Iterator[TextIO]:
    """A text file (UTF-8) to write ``path`` through, a part at a time, as
    :func:`write_text_atomically` writes it whole: into a temporary file beside ``path``,
    flushed to disk and renamed over it when the block ends; on any error in the block the
    temporary file is removed and ``path`` is as it was. With ``rename=False`` the
    temporary file is kept, not renamed: its name is ``handle.name``, for a caller that
    renames several files together."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    descriptor, temporary = tempfile.mkstemp(
        dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp"
    )
    try:
        # mkstemp makes the file private (0600); the result should read like any export.
        os.fchmod(descriptor, mode)
        os.close(descriptor)
        # Opened by name, so that ``handle.name`` names the temporary file.
        with open(temporary, "w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            # Without it a power loss after the rename can leave an empty file.
            os.fsync(handle.fileno())
        if rename:
            os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def path_inside(directory: str, name: str) -> str:
    """The path of the file ``name`` in ``directory``, resolved (symbolic links and
    ``..`` followed); ``ValueError`` if that is not strictly inside ``directory``.

    Names come from data (episode ids), so a name such as ``../../x``, an absolute path
    or a symbolic link out of ``directory`` must not choose where a file is written.
    """
    root = os.path.realpath(directory)
    path = os.path.realpath(os.path.join(root, name))
    if os.path.dirname(path) != root:
        raise ValueError(
            f"{name!r} would be written to {path}, outside {root}; nothing was written"
        )
    return path
