"""The two errors of the scenario JSON layer: a bad file, and a value that cannot be written."""

from collections.abc import Sequence

from sotopia_are import SotopiaAreError

__all__ = ["JsonPath", "ScenarioExportError", "ScenarioFormatError", "format_json_path"]

JsonPath = Sequence[str | int]
"""A location inside a JSON document: object keys and list indices, outermost first."""


def format_json_path(path: JsonPath) -> str:
    """Render a location the way users read it: ``events[3].dependencies[0]``.

    The empty path (the document itself) renders as ``$``.
    """
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text or "$"


class ScenarioFormatError(SotopiaAreError, ValueError):
    """A scenario file cannot be imported; nothing of it was imported.

    ``path`` is where in the document the (first) problem is, ``problem`` what it is;
    the message is ``"<path>: <problem>"``.
    """

    def __init__(self, path: JsonPath, problem: str) -> None:
        self.path: tuple[str | int, ...] = tuple(path)
        self.problem = problem
        super().__init__(f"{format_json_path(self.path)}: {problem}")


class ScenarioExportError(SotopiaAreError, ValueError):
    """A scenario or run cannot be written as JSON that would import again.

    Raised before anything is written; the message names the event or app and the value.
    """
