"""`ScriptParseError`: a script line the parser cannot read."""

from sotopia_are import SotopiaAreError

__all__ = ["ScriptParseError"]


class ScriptParseError(SotopiaAreError, ValueError):
    """A script line that cannot be read; the message gives the 1-based line and quotes it."""

    def __init__(self, reason: str, line_number: int | None = None, line: str = "") -> None:
        self.reason = reason
        self.line_number = line_number
        self.line = line
        where = "" if line_number is None else f"line {line_number}: "
        quoted = "" if line_number is None else f"\n    {line}"
        super().__init__(f"{where}{reason}{quoted}")
