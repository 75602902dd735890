"""The grammar of one script line: turn headers, and how a participant's action starts.

A line may start with a `Turn #N` header (`Turn 1:`, `Turn #2`, any mix in one script)
and an action in Sotopia's rendered form (`Name said: "…"`, `Name [action] …`,
`Name [non-verbal communication] …`, `Name did nothing`, `Name left the conversation`),
or its colon form (`Name: did nothing.`; trailing `,` `.` `;` are tolerated), either
possibly private (`Name [private to [...]]: …`). :class:`LineReader` reads where an
action starts; where quoted speech ends is :mod:`.quoted_speech`'s business.
"""

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from .action import ActionType, reject_duplicate_recipients, validate_recipients
from .parse_error import ScriptParseError
from .screenplay import (
    CueError,
    Part,
    Remark,
    label_cues,
    name_at,
    read_cues,
    read_speech,
    spellings,
)

__all__ = [
    "ACTION_LIKE",
    "HEADER",
    "SCREENPLAY_LIKE",
    "TRAILING",
    "ActionStart",
    "LineReader",
    "Reading",
    "strip_markers",
]

HEADER = re.compile(r"turn\s*#?\s*(\d+)\s*(?:[:.,-]\s*|\s+|$)", re.IGNORECASE)
"""A turn header at the start of a line; group 1 is its number."""
_PRIVATE = re.compile(r"\[\s*private\s+to\s*(\[[^\]]*\]|[^\]]*)\]\s*", re.IGNORECASE)
_COLON = re.compile(r"\s*:\s*")
_SAID = re.compile(r"(?:\[speak\]\s*)?said\s*:\s*", re.IGNORECASE)
_BRACKETED = re.compile(r"\[(action|non-verbal communication)\]\s*", re.IGNORECASE)
# People end actions with stray punctuation (`Name: left the conversation,`).
TRAILING = r"[\s,.;]*"
_NOTHING = re.compile(rf"did nothing{TRAILING}", re.IGNORECASE)
_LEAVE = re.compile(rf"left the conversation{TRAILING}", re.IGNORECASE)
# What a speaker's name looks like when we do not know it: one to five words without
# the characters that separate a name from its action.
_NAME_LIKE = r"[^\s:\[\]\"#]+(?: [^\s:\[\]\"]+){0,4}?"
ACTION_LIKE = re.compile(
    rf"(?P<name>{_NAME_LIKE})\s*:?\s*(?:\[\s*private\s+to[^\n]*?\]\]?\s*:?\s*)?"
    r"(?:(?:\[speak\]\s*)?said\s*:|\[(?:action|non-verbal communication)\]"
    r"|(?:did nothing|left the conversation)\W*$)",
    re.IGNORECASE,
)
"""A line that looks like an action by someone (``name``), whether a participant or not."""
SCREENPLAY_LIKE = re.compile(rf"(?P<name>{_NAME_LIKE})\s*:")
"""A line that looks like a speaker label (``name:``) by someone."""
# Speech may be quoted with straight or with typographic double quotes.
_QUOTES = {'"': '"', "\u201c": "\u201d"}


@dataclass(frozen=True)
class ActionStart:
    """The start of an action on one line; quoted speech may continue on later lines."""

    speaker: str
    kind: ActionType
    argument: str
    to: list[str] | None
    quote_at: int | None
    """Index just after the opening quote of speech, when the speech is quoted."""
    closer: str = '"'
    """The quote that closes the speech: `"`, or `\u201d` after an opening `\u201c`."""
    screenplay: bool = False
    """The public `Name: text` form, which a preamble also uses to describe people."""
    colon: bool = False
    """Written in a colon form (`Name: …`, `Name [private to …]: …`)."""
    more: tuple[Part, ...] = ()
    """Further actions on the same line: speech after a whisper cue in the middle of it."""
    notes: tuple[Remark, ...] = ()
    """What reading its cues left out or could not read."""

    @property
    def explicit(self) -> bool:
        """Whether the line says outright that it is an action: anything but unquoted
        `Name: text`, which is also how speech quotes people."""
        return not (self.screenplay and self.quote_at is None)


@dataclass
class Reading:
    """What the parser read from a line on: one speaker's actions (none for a skipped
    line), notes `(severity, message)` about it, and the last line it used."""

    speaker: str
    parts: list[Part]
    notes: list[Remark] = field(default_factory=list)
    last: int = 0


_T = TypeVar("_T")


def strip_markers(raw: str) -> str:
    # Leading whitespace and markdown quote markers (`> Name said: …`) carry no meaning.
    return raw.lstrip().lstrip(">").lstrip()


def _plain_text(line: str, pos: int) -> bool:
    """Whether `line` from `pos` is unquoted text rather than another form after a colon
    (`said: …`, `[action] …`, `did nothing`, `left the conversation`)."""
    rest = line[pos:].rstrip()
    forms = (_SAID.match(line, pos), _BRACKETED.match(line, pos), _NOTHING.fullmatch(rest))
    return rest[:1] not in _QUOTES and not any(forms) and not _LEAVE.fullmatch(rest)


class LineReader:
    """A script's lines and its participants, and how one line starts an action; the
    parser's parts share it."""

    def __init__(self, text: str, agent_names: Sequence[str], check_recipients: bool) -> None:
        self.names = list(agent_names)
        self.by_length = sorted(self.names, key=len, reverse=True)
        self.check_recipients = check_recipients
        text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
        self.lines = text.split("\n")
        self.last_line = max((i for i, line in enumerate(self.lines) if line.strip()), default=-1)
        # Decided up front: in a script with headers, what precedes the first one is context.
        self.has_headers = any(self.header(strip_markers(line)) for line in self.lines)
        self.known = spellings(self.names)
        # The number of the turn header read last (None before one, or without headers).
        self.turn: int | None = None

    def error(self, reason: str, index: int) -> ScriptParseError:
        return ScriptParseError(reason, index + 1, self.lines[index].strip())

    # -- line classification -------------------------------------------------------------

    def match_action(self, line: str, index: int) -> ActionStart | None:
        """The action starting `line` by a participant (longest name first), if any."""
        for name in self.by_length:
            if not line.startswith(name):
                continue
            rest = line[len(name) :]
            if rest and not (rest[0].isspace() or rest[0] in ":["):
                continue
            start = self._match_tail(name, line, len(name), index)
            if start is not None:
                return start
        # A speaker label as people write it: any case, a first name, cues after it.
        found = name_at(line, self.known)
        if found is None:
            return None
        name, pos = found
        pos, cues = label_cues(line, pos)
        return self._match_tail(name, line, pos, index, cues)

    def _match_tail(
        self, name: str, line: str, pos: int, index: int, cues: Sequence[str] = ()
    ) -> ActionStart | None:
        colon = False
        if match := _COLON.match(line, pos):
            colon, pos = True, match.end()
        pos = len(line) - len(line[pos:].lstrip())
        to: list[str] | None = None
        if match := _PRIVATE.match(line, pos):
            to = self._recipients(match[1], name, index)
            pos = match.end()
            if match := _COLON.match(line, pos):
                colon, pos = True, match.end()
        rest = line[pos:].rstrip()
        if colon and to is None and _plain_text(line, pos):  # screenplay form `Name: text`
            return self._screenplay_speech(name, rest, index, cues)
        notes: tuple[Remark, ...] = ()
        if cues:
            cue_to, remarks = self._read(lambda: read_cues(cues, name, self.names), index)
            to, notes = to or cue_to, tuple(remarks)
        if match := _SAID.match(line, pos):
            return self._speech(name, line, match.end(), to, colon, notes)
        if match := _BRACKETED.match(line, pos):
            kind: ActionType = (
                "action" if match[1].lower() == "action" else "non-verbal communication"
            )
            argument = line[match.end() :].strip()
            return ActionStart(name, kind, argument, to, None, colon=colon, notes=notes)
        if _NOTHING.fullmatch(rest):
            return ActionStart(name, "none", "", to, None, colon=colon, notes=notes)
        if _LEAVE.fullmatch(rest):
            return ActionStart(name, "leave", "", to, None, colon=colon, notes=notes)
        if colon:  # `Name [private to …]: text`, or `Name: "quoted"`
            return self._speech(name, line, pos, to, colon, notes, screenplay=to is None)
        return None

    @staticmethod
    def _speech(
        name: str,
        line: str,
        pos: int,
        to: list[str] | None,
        colon: bool,
        notes: tuple[Remark, ...],
        *,
        screenplay: bool = False,
    ) -> ActionStart | None:
        text = line[pos:]
        if text[:1] in _QUOTES:
            closer = _QUOTES[text[0]]
            return ActionStart(
                name, "speak", "", to, pos + 1, closer, screenplay, colon, notes=notes
            )
        if not text.strip():
            return None
        argument = text.strip()
        return ActionStart(
            name, "speak", argument, to, None, screenplay=screenplay, colon=colon, notes=notes
        )

    def _screenplay_speech(
        self, name: str, text: str, index: int, cues: Sequence[str]
    ) -> ActionStart | None:
        """`Name: text` with its cues read (see `screenplay.read_speech`)."""
        speech = self._read(lambda: read_speech(text, name, self.names, cues), index)
        if not speech.parts:
            return None
        first, *more = speech.parts
        return ActionStart(
            name,
            first.kind,
            first.argument,
            first.to,
            None,
            screenplay=True,
            colon=True,
            more=tuple(more),
            notes=tuple(speech.notes),
        )

    def _read(self, reading: Callable[[], _T], index: int) -> _T:
        """`reading()`, a cue it cannot read an error at line `index`."""
        try:
            return reading()
        except CueError as exc:
            raise self.error(str(exc), index) from None

    def _recipients(self, raw: str, sender: str, index: int) -> list[str]:
        raw = raw.strip()
        names: object
        if raw.startswith("["):
            try:
                names = ast.literal_eval(raw)
            except (ValueError, SyntaxError):
                raise self.error(f"cannot read the private recipients {raw}", index) from None
        else:
            names = [part.strip().strip("'\"") for part in raw.split(",")]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise self.error(f"cannot read the private recipients {raw}", index)
        try:
            if not self.check_recipients:
                reject_duplicate_recipients(names)
                return names
            return validate_recipients(names, self.names, sender)
        except ValueError as exc:
            raise self.error(str(exc), index) from None

    @staticmethod
    def header(line: str) -> tuple[int, str] | None:
        """`(number, the text after the header)` when `line` is a turn header."""
        match = HEADER.match(line)
        if match is None:
            return None
        return int(match[1]), line[match.end() :]

    def _try_match(self, line: str, index: int) -> ActionStart | None:
        """`match_action`, with None for a line whose recipients cannot be read."""
        try:
            return self.match_action(line, index)
        except ScriptParseError:
            return None
