"""Parse human-written conversation scripts into `(speaker, AgentAction)` pairs.

A line-oriented state machine that knows the participants' names. It reads a context
preamble, `Turn #N` headers (alone or followed by the action, `Turn 1:`, `Turn #2`, any mix
in one script), headerless screenplays, all five action kinds in Sotopia's rendered form
and their colon forms (`Name: did nothing.`; trailing `,` `.` `;` are tolerated), private
actions, and quoted speech that runs over several lines — even speech that itself contains
`Turn #N:` lines. Anything else is a `ScriptParseError` naming the line. It never guesses
a speaker.

Where quoted speech ends: at the first line ending in its closing quote that is followed
by the end of the script or by a well-formed next step — a participant's action, or a turn
header numbered above the current turn (alone, or with a participant's action) — provided
that step reads through to a well-formed step after it too (one step of look-ahead, so an
embedded transcript's `Turn #5: Ann said: "…"` does not end the speech when what follows
it cannot be read). A later `Turn #N: Name …` of a participant starts the next turn unless
the line before it ends in the quote, and so does a bare `Turn #N` line, unless the speech
goes on past it, through lines that are no step of their own, to a closing quote followed
by a well-formed next step (speech quoting a script reads to its closing quote). If the
line that closes a speech reads as an explicit action of its own (`Bob said: "…"`,
`Bob [action] …`, `Turn #N: Bob …` from this turn on), a missing quote cannot be told
from quoted text: that is a `ScriptParseError` at the line rather than a guess.

In a script with turn headers, the lines before the first header are its context:
screenplay-looking lines there (`Alice: a baker, 30`) describe people, they are not speech.
An unambiguous action before the first header (`Alice said: "…"`, `Alice [action] …`,
`Alice did nothing`, `Alice left the conversation`, with or without `:` or a private
prefix) means headerless actions and headers are mixed; that is an error at its line
rather than a guess at its turn. A script with no header at all starts at its first action.

Screenplays (see `screenplay.py`): a speaker label may name a participant in any case, by
full or unique first name, with cues after it (`MARCUS (CONT'D):`); cues in unquoted
`Name: text` speech are read (a whisper makes it private, a delivery cue is left out). In a
script without headers, a label may stand on its own line above its speech (to a blank
line), a stage direction that starts with a participant is that participant's action, and
titles, scene headings and narration naming no one are skipped. What is skipped or read
with a caveat is a `ScriptNote` (`parse_script_notes`); a label naming no participant,
or a whisper to no one, is an error at its line.
"""

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from sotopia_are import SotopiaAreError

from .action import ActionType, AgentAction, reject_duplicate_recipients, validate_recipients
from .screenplay import (
    CueError,
    Direction,
    Part,
    Remark,
    ScriptNote,
    Severity,
    bare_label,
    heading_kind,
    is_caps,
    label_cues,
    name_at,
    read_cues,
    read_direction,
    read_speech,
    spellings,
    whisper_cues,
)

__all__ = [
    "ParsedScript",
    "ScriptAction",
    "ScriptNote",
    "ScriptParseError",
    "infer_speakers",
    "parse_dialogue",
    "parse_script",
    "parse_script_notes",
    "script_context",
    "split_turns",
    "unreadable_speech",
]

_HEADER = re.compile(r"turn\s*#?\s*(\d+)\s*(?:[:.,-]\s*|\s+|$)", re.IGNORECASE)
_PRIVATE = re.compile(r"\[\s*private\s+to\s*(\[[^\]]*\]|[^\]]*)\]\s*", re.IGNORECASE)
_COLON = re.compile(r"\s*:\s*")
_SAID = re.compile(r"(?:\[speak\]\s*)?said\s*:\s*", re.IGNORECASE)
_BRACKETED = re.compile(r"\[(action|non-verbal communication)\]\s*", re.IGNORECASE)
# People end actions with stray punctuation (`Name: left the conversation,`).
_TRAILING = r"[\s,.;]*"
_NOTHING = re.compile(rf"did nothing{_TRAILING}", re.IGNORECASE)
_LEAVE = re.compile(rf"left the conversation{_TRAILING}", re.IGNORECASE)
# What a speaker's name looks like when we do not know it: one to five words without
# the characters that separate a name from its action.
_NAME_LIKE = r"[^\s:\[\]\"#]+(?: [^\s:\[\]\"]+){0,4}?"
_ACTION_LIKE = re.compile(
    rf"(?P<name>{_NAME_LIKE})\s*:?\s*(?:\[\s*private\s+to[^\n]*?\]\]?\s*:?\s*)?"
    r"(?:(?:\[speak\]\s*)?said\s*:|\[(?:action|non-verbal communication)\]"
    r"|(?:did nothing|left the conversation)\W*$)",
    re.IGNORECASE,
)
_SCREENPLAY_LIKE = re.compile(rf"(?P<name>{_NAME_LIKE})\s*:")
# A line that ends like `Name did nothing` for some name; with a `:` or `[` after the first
# character, this is every line that can start an action for some list of participants.
_ENDS_LIKE_ACTION = re.compile(
    rf"\S.*\s(?:did nothing|left the conversation){_TRAILING}", re.IGNORECASE
)
# A superset of the lines that read as an explicit action (see `_Start.explicit`) for some
# participant names: `said:`, a bracketed kind or private prefix, or `Name: "quoted"`.
_EXPLICIT_LIKE = re.compile(
    r"said\s*:|\[\s*(?:action|non-verbal communication|private\s+to)|:\s*[\"\u201c]",
    re.IGNORECASE,
)
# Speech may be quoted with straight or with typographic double quotes.
_QUOTES = {'"': '"', "\u201c": "\u201d"}
# What may follow a closing quote: one `,` (an artifact of transcripts exported from JSON
# lists), or in the colon form, where people write `Name: "Hi".`, any of `,` `.` `;`.
_AFTER_QUOTE = re.compile(r",?$")
_AFTER_QUOTE_COLON = re.compile(rf"{_TRAILING}$")


# A line in parentheses or brackets: a stage direction (or a cue on its own line).
_STAGE = re.compile(r"\((.*)\)\.?|\[(.*)\]\.?")
_CUES = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
# What follows a participant's name in a script form gone wrong (a missing colon, a
# misspelt kind): an error, never narration.
_BROKEN_FORM = re.compile(r"\s*(?:said\b|says\s*:|\[|[\"\u201c])", re.IGNORECASE)
_BYLINE = re.compile(r"(?:written\s+)?by\s", re.IGNORECASE)
# At most this many words make a speaker label on its own line in capitals.
_LABEL_WORDS = 3


class ScriptParseError(SotopiaAreError, ValueError):
    """A script line that cannot be read; the message gives the 1-based line and quotes it."""

    def __init__(self, reason: str, line_number: int | None = None, line: str = "") -> None:
        self.reason = reason
        self.line_number = line_number
        self.line = line
        where = "" if line_number is None else f"line {line_number}: "
        quoted = "" if line_number is None else f"\n    {line}"
        super().__init__(f"{where}{reason}{quoted}")


@dataclass(frozen=True)
class ScriptAction:
    """One parsed action: who did it, what, under which turn header, from which line."""

    speaker: str
    action: AgentAction
    turn: int | None
    """The number of the `Turn` header above the action, or None in a headerless script."""
    line: int
    """The 1-based line where the action starts."""


@dataclass(frozen=True)
class _Start:
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
class _Reading:
    """What the parser read from a line on: one speaker's actions (none for a skipped
    line), notes `(severity, message)` about it, and the last line it used."""

    speaker: str
    parts: list[Part]
    notes: list[Remark] = field(default_factory=list)
    last: int = 0


# A well-formed next step: the action it starts (None for a bare header), the text the
# action starts in (the line, or what follows its header) and the turn it belongs to.
_Step = tuple[_Start | None, str, int | None]
_T = TypeVar("_T")


def _strip_markers(raw: str) -> str:
    # Leading whitespace and markdown quote markers (`> Name said: …`) carry no meaning.
    return raw.lstrip().lstrip(">").lstrip()


def _closing(text: str, closer: str = '"', colon: bool = False) -> str:
    """`text` up to and including a closing quote at its end (allowing what
    `_AFTER_QUOTE`, or `_AFTER_QUOTE_COLON` in the colon form, allows after it), or ""
    when it does not end in a quote."""
    text = text.rstrip()
    after = (_AFTER_QUOTE_COLON if colon else _AFTER_QUOTE).search(text)
    assert after is not None  # both patterns match the empty end of any text
    text = text[: after.start()]
    return text if text.endswith(closer) else ""


def _plain_text(line: str, pos: int) -> bool:
    """Whether `line` from `pos` is unquoted text rather than another form after a colon
    (`said: …`, `[action] …`, `did nothing`, `left the conversation`)."""
    rest = line[pos:].rstrip()
    forms = (_SAID.match(line, pos), _BRACKETED.match(line, pos), _NOTHING.fullmatch(rest))
    return rest[:1] not in _QUOTES and not any(forms) and not _LEAVE.fullmatch(rest)


def _bare_header(line: str) -> bool:
    # `Turn #N` with nothing after it: in a `Turn #N` (block) script it starts the next
    # turn even inside quoted speech.
    line = _strip_markers(line).rstrip()
    match = _HEADER.match(line)
    return match is not None and match.end() == len(line)


def _could_start_action(line: str) -> bool:
    """Whether `line` starts an action for some list of participants (a superset of what
    `_Parser.match_action` accepts for any names: names are non-blank, and the action
    after one starts with `:`, `[`, `said:` or is `did nothing`/`left the conversation`)."""
    line = _strip_markers(line).rstrip()
    return ":" in line[1:] or "[" in line[1:] or _ENDS_LIKE_ACTION.fullmatch(line) is not None


def _could_start_turn(line: str) -> bool:
    """Whether `line` is a turn header followed by what could start an action for some
    participant names (a superset of the headers `_Parser._well_formed_step` accepts)."""
    line = _strip_markers(line)
    header = _HEADER.match(line)
    return header is not None and _could_start_action(line[header.end() :])


def unreadable_speech(speech: str) -> str | None:
    """Why `speech` rendered as `Name said: "…"` in a `Turn #N` script would not read back
    as itself, whoever the participants are; None when it reads back exactly.

    Quoted speech ends at a line ending in `"` that is followed by a participant's action,
    a `Turn #N` line alone or with an action starts the next turn, and a closing line that
    reads as an explicit action of its own is an error. The participants are not known here, so any
    line that could be such an action for some name counts as one.
    """
    lines = speech.split("\n")
    rendered = [*lines[:-1], lines[-1] + '"']  # the closing quote ends the last line
    for position, line in enumerate(rendered):
        if position and (_bare_header(line) or _could_start_turn(line)):
            return f"its line {lines[position]!r} would start a new turn"
        if position == len(rendered) - 1 or not _closing(line):
            continue
        following = next(
            (later for later in range(position + 1, len(rendered)) if rendered[later].strip()),
            None,
        )
        if following is not None and _could_start_action(rendered[following]):
            return (
                f"its line {lines[following]!r} would read as a new action after the line "
                f"{lines[position]!r}, which ends in a quote"
            )
    if len(lines) > 1 and _EXPLICIT_LIKE.search(rendered[-1]):
        return f"its last line {lines[-1]!r} would read as an action of its own"
    return None


def infer_speakers(text: str) -> list[str]:
    """The names that start action lines of `text` (`Name said: …`, `Name [action] …`, …).

    For the Sotopia methods that take no participant list; parsing proper needs the names.
    A script with no such line is read as a screenplay: its speaker labels, as written
    (`DANA:`, `MARCUS (CONT'D):`, `LUCIA` on its own line above speech).
    """
    found: dict[str, None] = {}
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for raw in lines:
        line = _strip_markers(raw)
        if header := _HEADER.match(line):
            line = line[header.end() :]
        if match := _ACTION_LIKE.match(line):
            found.setdefault(match["name"].strip(), None)
    return list(found) or _screenplay_speakers(lines)


def _screenplay_speakers(lines: list[str]) -> list[str]:
    """The speaker labels of a screenplay, first spelling of each name (any case)."""
    found: dict[str, str] = {}
    for index, raw in enumerate(lines):
        line = _strip_markers(raw).strip()
        if not line or heading_kind(line):
            continue
        name = _CUES.sub("", line).strip()
        if labelled := _SCREENPLAY_LIKE.match(line):
            name = _CUES.sub("", labelled["name"]).strip()
        elif not is_caps(line):
            continue
        below = _strip_markers(lines[index + 1]).strip() if index + 1 < len(lines) else ""
        bare = labelled is None and not (_CUES.search(line) or (below and not _BYLINE.match(below)))
        if name and len(name.split()) <= _LABEL_WORDS and not bare:
            found.setdefault(name.casefold(), name)
    return list(found.values())


class _Parser:
    """One pass over a script's lines (looking one step ahead where quoted speech may
    end); `run` returns the actions and the turn spans."""

    def __init__(self, text: str, agent_names: Sequence[str], check_recipients: bool) -> None:
        self.names = list(agent_names)
        self.by_length = sorted(self.names, key=len, reverse=True)
        self.check_recipients = check_recipients
        text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
        self.lines = text.split("\n")
        self.last_line = max((i for i, line in enumerate(self.lines) if line.strip()), default=-1)
        # Decided up front: in a script with headers, what precedes the first one is context.
        self.has_headers = any(self.header(_strip_markers(line)) for line in self.lines)
        self.known = spellings(self.names)
        self.turn: int | None = None
        self.started = False
        self.actions: list[ScriptAction] = []
        self.notes: list[ScriptNote] = []
        self.spans: list[list[int]] = []  # [first, last] line index of each turn's text

    def error(self, reason: str, index: int) -> ScriptParseError:
        return ScriptParseError(reason, index + 1, self.lines[index].strip())

    # -- line classification -------------------------------------------------------------

    def match_action(self, line: str, index: int) -> _Start | None:
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
    ) -> _Start | None:
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
            return _Start(name, kind, argument, to, None, colon=colon, notes=notes)
        if _NOTHING.fullmatch(rest):
            return _Start(name, "none", "", to, None, colon=colon, notes=notes)
        if _LEAVE.fullmatch(rest):
            return _Start(name, "leave", "", to, None, colon=colon, notes=notes)
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
    ) -> _Start | None:
        text = line[pos:]
        if text[:1] in _QUOTES:
            closer = _QUOTES[text[0]]
            return _Start(name, "speak", "", to, pos + 1, closer, screenplay, colon, notes=notes)
        if not text.strip():
            return None
        argument = text.strip()
        return _Start(
            name, "speak", argument, to, None, screenplay=screenplay, colon=colon, notes=notes
        )

    def _screenplay_speech(
        self, name: str, text: str, index: int, cues: Sequence[str]
    ) -> _Start | None:
        """`Name: text` with its cues read (see `screenplay.read_speech`)."""
        speech = self._read(lambda: read_speech(text, name, self.names, cues), index)
        if not speech.parts:
            return None
        first, *more = speech.parts
        return _Start(
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
        match = _HEADER.match(line)
        if match is None:
            return None
        return int(match[1]), line[match.end() :]

    # -- the main loop ---------------------------------------------------------------------

    def run(self) -> list[ScriptAction]:
        index = 0
        while index < len(self.lines):
            # Not right-stripped: quoted speech keeps its trailing spaces.
            line = _strip_markers(self.lines[index])
            if not line.strip():
                index += 1
                continue
            if header := self.header(line):
                number, rest = header
                if not self.started:
                    self._note_context(index)
                self.started = True
                self.turn = number
                self.spans.append([index, index])
                if not rest.strip():
                    index += 1
                    continue
                start = self.match_action(rest, index)
                if start is None:
                    raise self._not_understood(rest.rstrip(), index)
                index = self._take(start, rest, index)
                continue
            start = self.match_action(line, index)
            if start is not None and self.has_headers and not self.started:
                if not start.screenplay:
                    raise self.error(
                        "an action before the first turn header; put it under a 'Turn #N' "
                        "header, or write the whole script without headers",
                        index,
                    )
                start = None  # `Name: text` in the context describes someone
            if start is not None:
                self.started = True
                index = self._take(start, line, index)
                continue
            if not self.has_headers and (reading := self._screenplay(index, self.started)):
                index = self._take_reading(reading, index)
                continue
            if self.started or _ACTION_LIKE.match(line.rstrip()):
                raise self._not_understood(line.rstrip(), index)
            index += 1  # context preamble before the conversation starts
        if not self.actions:
            raise ScriptParseError(
                "no actions found; expected lines like 'Name said: \"…\"' by one of "
                + ", ".join(self.names)
            )
        return self.actions

    def context_end(self) -> int:
        """The index of the line where the conversation starts, as `run` sees it: the first
        turn header in a script with headers, else the first action by a participant (the
        number of lines when there is neither)."""
        for index, raw in enumerate(self.lines):
            line = _strip_markers(raw)
            if self.has_headers:
                if self.header(line):
                    return index
            elif self._try_match(line, index) is not None or self._acts(index):
                return index
        return len(self.lines)

    def _acts(self, index: int) -> bool:
        """Whether line `index`, before the conversation, starts it as a screenplay line."""
        if not self.lines[index].strip():
            return False
        try:
            reading = self._screenplay(index, started=False)
        except ScriptParseError:
            return False
        return reading is not None and bool(reading.parts)

    def _not_understood(self, line: str, index: int) -> ScriptParseError:
        match = _ACTION_LIKE.match(line) or (self.started and _SCREENPLAY_LIKE.match(line))
        if match:
            speaker = match["name"].strip()
            if speaker not in self.names:
                return self.error(
                    f"speaker {speaker!r} is not a participant (participants: "
                    f"{', '.join(self.names)})",
                    index,
                )
        return self.error(
            "cannot understand this line; expected a turn header ('Turn #N') or an action "
            "('Name said: \"…\"', 'Name [action] …', 'Name [non-verbal communication] …', "
            "'Name did nothing', 'Name left the conversation')",
            index,
        )

    def _take(self, start: _Start, line: str, index: int) -> int:
        """Record the action starting on line `index`; return the index after it."""
        last, argument = index, start.argument
        if start.quote_at is not None:
            last, argument = self._quoted(start, line[start.quote_at :], index)
        elif start.kind in ("action", "non-verbal communication") and last == self.last_line:
            # Transcripts exported from JSON lists end with a stray comma. Quoted speech and
            # the fixed forms allow it after them anyway; unquoted speech keeps it (the
            # comma may be the speaker's: `Bo Chen: I left the conversation,`).
            argument = argument.removesuffix(",").rstrip()
        parts = [Part(start.kind, argument, start.to), *start.more]
        return self._take_reading(_Reading(start.speaker, parts, list(start.notes), last), index)

    def _take_reading(self, reading: "_Reading", index: int) -> int:
        """Record what was read from line `index` on; return the index after it."""
        self.notes += [ScriptNote(index + 1, text, severity) for severity, text in reading.notes]
        for number, part in enumerate(reading.parts):
            action = AgentAction(action_type=part.kind, argument=part.argument, to=part.to)
            self.actions.append(ScriptAction(reading.speaker, action, self.turn, index + 1))
            self.started = True
            if number:
                continue  # one span for all the actions of one line
            if self.turn is None:  # headerless so far: each action is a turn of its own
                self.spans.append([index, reading.last])
            else:
                self.spans[-1][1] = reading.last
        return reading.last + 1

    def _note_context(self, index: int) -> None:
        """Note the context lines before the first turn header on line `index`."""
        used = [i for i in range(index) if self.lines[i].strip()]
        if used:
            span = (
                f"line {used[0] + 1}" if len(used) == 1 else f"lines {used[0] + 1}-{used[-1] + 1}"
            )
            self.notes.append(
                ScriptNote(
                    used[0] + 1, f"{span}, before the first turn header, are context; skipped"
                )
            )

    # -- screenplay lines (scripts without turn headers) -----------------------------------

    def _screenplay(self, index: int, started: bool) -> "_Reading | None":
        """What line `index` is as a screenplay line (`started`: after the first action):
        a label on its own line with the speech below, a stage direction or narration that
        starts with a participant (their action), or a title, scene heading or narration
        skipped with a note. None for a line that is an error as an action (`Eve said: …`
        or a form gone wrong, `Bob said "…"`). Raises for a label that names no participant."""
        line = _strip_markers(self.lines[index]).strip()
        if _ACTION_LIKE.match(line) or self._broken_form(line):
            return None
        if kind := heading_kind(line):
            return self._skipped(index, f"skipped a {kind}: {line!r}")
        if label := bare_label(line, self.known):
            return self._below_label(index, *label)
        if stage := _STAGE.fullmatch(line):
            direction = read_direction(stage[1] or stage[2], self.known)
            if acted := self._acted(direction, stage[1] or stage[2], index):
                return acted
            if direction.warning:
                return self._skipped(index, f"skipped {line!r}: {direction.warning}", "warning")
            return self._skipped(
                index, f"skipped a stage direction naming no participant: {line!r}"
            )
        if labelled := _SCREENPLAY_LIKE.match(line):
            written = _CUES.sub("", labelled["name"]).strip()
            if started or is_caps(written):
                raise self._stranger(written, index)
            return self._skipped(index, f"skipped context before the conversation: {line!r}")
        # Before the conversation, `Mia Davis is a principal.` describes her: context.
        direction = read_direction(line, self.known)
        if started and (acted := self._acted(direction, line, index)):
            return acted
        if is_caps(line) and len(_CUES.sub("", line).split()) <= _LABEL_WORDS:
            if self._labels_speech(line, index):
                raise self._stranger(_CUES.sub("", line).strip(), index, title_hint=True)
            return self._skipped(index, f"skipped a title: {line!r}")
        if direction.warning and started:
            return self._skipped(index, f"skipped {line!r}: {direction.warning}", "warning")
        what = "narration naming no participant" if started else "context before the conversation"
        return self._skipped(index, f"skipped {what}: {line!r}")

    def _acted(self, direction: Direction, text: str, index: int) -> "_Reading | None":
        """The action of `direction` (read from `text`, line `index`), if it has one. A
        whisper cue inside it is an error: the direction is public, the whisper is not."""
        if direction.speaker is None or direction.part is None:
            return None
        if whispers := whisper_cues(text):
            raise self.error(
                f"a whisper cue '({whispers[0]})' inside a stage direction, which everyone "
                "sees; write what is whispered as the speaker's line: "
                "'NAME: (whispering to X) …'",
                index,
            )
        return _Reading(direction.speaker, [direction.part], [], index)

    def _broken_form(self, line: str) -> bool:
        """Whether `line` starts with a participant and then one of the script's forms gone
        wrong (`Bob said "hi"`, `Bob [acton] waves`), an error rather than narration."""
        found = name_at(line, self.known)
        return found is not None and _BROKEN_FORM.match(line[found[1] :]) is not None

    def _below_label(self, index: int, speaker: str, cues: list[str]) -> "_Reading":
        """The speech below a label on its own line: the lines up to a blank one or to a
        line that starts something else (cues in parentheses on their own lines included)."""
        last = index
        for following in range(index + 1, len(self.lines)):
            text = _strip_markers(self.lines[following]).strip()
            if not text or self._ends_speech_block(text, following):
                break
            last = following
        below = "\n".join(_strip_markers(line).strip() for line in self.lines[index + 1 : last + 1])
        speech = self._read(lambda: read_speech(below, speaker, self.names, cues), index)
        if not speech.parts:
            line = self.lines[index].strip()
            return self._skipped(
                index, f"the label {line!r} has no speech below it; skipped", "warning"
            )
        return _Reading(speaker, speech.parts, speech.notes, last)

    def _ends_speech_block(self, text: str, index: int) -> bool:
        """Whether `text` (line `index`, under a label) starts something else than speech:
        a heading, a label, an action, or a stage direction that starts with a participant."""
        if heading_kind(text) or bare_label(text, self.known) or _ACTION_LIKE.match(text):
            return True
        if self._try_match(text, index) is not None:
            return True
        if stage := _STAGE.fullmatch(text):
            return read_direction(stage[1] or stage[2], self.known).speaker is not None
        labelled = _SCREENPLAY_LIKE.match(text)
        return labelled is not None and is_caps(_CUES.sub("", labelled["name"]))

    def _labels_speech(self, line: str, index: int) -> bool:
        """Whether the capitals `line` is a speaker label (a screenplay extension such as
        `(O.S.)`, or text right below it) rather than a title (a blank line, a byline, a
        heading or a participant's line below it)."""
        if _CUES.search(line):
            return True
        if index + 1 >= len(self.lines):
            return False
        below = _strip_markers(self.lines[index + 1]).strip()
        if not below or _BYLINE.match(below) or heading_kind(below):
            return False
        return bare_label(below, self.known) is None and self._try_match(below, index + 1) is None

    def _stranger(self, written: str, index: int, *, title_hint: bool = False) -> ScriptParseError:
        hint = "; if it is a title, put a blank line after it" if title_hint else ""
        return self.error(
            f"speaker {written!r} is not a participant (participants: "
            f"{', '.join(self.names)}){hint}",
            index,
        )

    def _skipped(self, index: int, message: str, severity: Severity = "note") -> "_Reading":
        return _Reading("", [], [(severity, message)], index)

    # -- quoted speech ---------------------------------------------------------------------

    def _quoted(self, start: _Start, first: str, index: int) -> tuple[int, str]:
        """Find where speech opened on line `index` closes: `(last line, the speech)`.

        The speech closes at a line ending in its closing quote that is followed by the
        end of the script or a well-formed next step that reads through (see the module
        docstring); failing that, by any header or a step that does not read through;
        failing that, by anything. The search stops at the first line that starts the next
        turn for sure, so a missing quote is reported.
        """
        # The earliest closing line of each strength: strong, weak, and one followed by a
        # line that is neither (which then gets its own error).
        earliest: dict[str, int] = {}
        # Past a bare `Turn #N` line the speech goes on only through lines that are no
        # step of their own (or bare headers), to a closing quote with a strong boundary:
        # speech that quotes a script (`Turn #2` alone on a line) reads to its closing
        # quote, while a missing quote before the next turn's action is still reported.
        past_bare_header = False
        for end in range(index, len(self.lines)):
            if end > index:
                if past_bare_header:
                    if _bare_header(self.lines[end]):
                        continue
                    if self._well_formed_step(end, self.turn) is not None:
                        break
                elif self._starts_next_turn(end, start, self.turn):
                    if earliest or not _bare_header(self.lines[end]):
                        break
                    past_bare_header = True
                    continue
            text = first if end == index else self.lines[end]
            if not _closing(text, start.closer, start.colon):
                continue
            strength = self._boundary_after(end)
            if strength == "strong":
                return self._closed_at(start, first, index, end)
            if not past_bare_header:
                earliest.setdefault(strength, end)
        for strength in ("weak", "none"):
            if strength in earliest:
                return self._closed_at(start, first, index, earliest[strength])
        closer = start.closer
        if closer in first and first.rsplit(closer, 1)[1].strip() not in ("", ","):
            after = first.rsplit(closer, 1)[1].strip()
            raise self.error(
                f"text after the closing {closer!r} of this speech: {after!r}; end the line "
                f"with the quote, and put an action in a line of its own",
                index,
            )
        raise self.error(f"this quoted speech is never closed with a {closer!r}", index)

    def _closed_at(self, start: _Start, first: str, index: int, end: int) -> tuple[int, str]:
        """`(end, the speech)` for speech from line `index` closing on line `end`; raises if
        line `end` also reads as an explicit action of its own, since a closing quote may
        then be missing on an earlier line: that cannot be decided, so it is not guessed."""
        if end > index:
            # Numbers count as going on from this turn here: people repeat a number by mistake.
            found = self._well_formed_step(end, self.turn, same_turn=True)
            if found is not None and (found[0] is None or found[0].explicit):
                repeated = " or a turn number repeated" if found[2] == self.turn else ""
                raise self.error(
                    f"this line closes the quoted speech opened on line {index + 1} but also "
                    f"reads as an action of its own; is a closing quote missing on an earlier "
                    f"line{repeated}? Close the speech before this line, or reword it",
                    end,
                )
        parts = [first, *self.lines[index + 1 : end + 1]]
        parts[-1] = _closing(parts[-1], start.closer, start.colon)[:-1]
        return end, "\n".join(parts)

    def _starts_next_turn(self, index: int, start: _Start, turn: int | None) -> bool:
        """Whether line `index`, inside `start`'s quoted speech in turn `turn`, starts the
        next turn for sure, so the speech never spans it: a bare `Turn #N` line; a header
        numbered above `turn` with a participant's action, unless the line before it ends
        in the closing quote (then it may end the speech, or be quoted, see `_quoted`); in a
        script without headers, any action."""
        line = _strip_markers(self.lines[index])
        if not self.has_headers:
            return self._try_match(line, index) is not None
        if _bare_header(line):
            return True
        if self.header(line) is None or self._well_formed_step(index, turn) is None:
            return False
        before = next(i for i in range(index - 1, -1, -1) if self.lines[i].strip())
        return not _closing(self.lines[before], start.closer, start.colon)

    def _boundary_after(self, end: int) -> Literal["strong", "weak", "none"]:
        following = self._next_text_line(end)
        if following is None:
            return "strong"
        found = self._well_formed_step(following, self.turn)
        if found is not None and self._reads_through(found, following):
            return "strong"
        if found is None and self._stranger_action(following, self.turn):
            return "strong"
        header = self.header(_strip_markers(self.lines[following]))
        return "weak" if header is not None or found is not None else "none"

    def _stranger_action(self, index: int, turn: int | None) -> bool:
        """Whether line `index` is an explicit action (`Bobb said: "…"`, maybe under a header
        numbered above `turn`) by someone who is not a participant. Speech ends before it,
        so that it is an error at its line rather than speech that swallowed a misspelt
        name. Only called where `_well_formed_step` found no step at `index`."""
        line = _strip_markers(self.lines[index])
        header = self.header(line)
        if header is not None:
            line = header[1] if turn is None or header[0] > turn else ""
        return _ACTION_LIKE.match(line.rstrip()) is not None

    def _next_text_line(self, index: int) -> int | None:
        """The index of the first non-blank line after `index`, if any."""
        return next((i for i in range(index + 1, len(self.lines)) if self.lines[i].strip()), None)

    def _well_formed_step(
        self, index: int, turn: int | None, *, same_turn: bool = False
    ) -> _Step | None:
        """What line `index` starts, if it is a well-formed next step after turn `turn`: a
        participant's action, or a header numbered above `turn` (or equal to it, with
        `same_turn`) with nothing or with a participant's action after it."""
        line = _strip_markers(self.lines[index])
        header = self.header(line)
        if header is None:
            start = self._try_match(line, index)
            return None if start is None else (start, line, turn)
        number, rest = header
        if turn is not None and (number < turn or (number == turn and not same_turn)):
            return None
        if not rest.strip():
            return None, rest, number
        start = self._try_match(rest, index)
        return None if start is None else (start, rest, number)

    def _reads_through(self, step: _Step, index: int) -> bool:
        """Whether `step` (on line `index`) ends, its quoted speech included, where the end
        of the script or what `_ends_speech` accepts follows (no further look-ahead)."""
        start, text, turn = step
        if start is None:
            return True  # a bare header
        last: int | None = index
        if start.quote_at is not None:
            last = self._plain_close(start, text[start.quote_at :], index, turn)
        if last is None:
            return False
        following = self._next_text_line(last)
        return following is None or self._ends_speech(following, turn)

    def _ends_speech(self, index: int, turn: int | None) -> bool:
        """Whether line `index`, after a closing quote, ends the speech without look-ahead:
        a well-formed step after turn `turn`, or a stranger's action."""
        return self._well_formed_step(index, turn) is not None or self._stranger_action(index, turn)

    def _plain_close(self, start: _Start, first: str, index: int, turn: int | None) -> int | None:
        """The first line from `index` that closes `start`'s speech and is followed by the
        end of the script or what `_ends_speech` accepts; None if there is none before the
        next turn surely starts."""
        for end in range(index, len(self.lines)):
            if end > index and self._starts_next_turn(end, start, turn):
                return None
            text = first if end == index else self.lines[end]
            if _closing(text, start.closer, start.colon):
                following = self._next_text_line(end)
                if following is None or self._ends_speech(following, turn):
                    return end
        return None

    def _try_match(self, line: str, index: int) -> _Start | None:
        """`match_action`, with None for a line whose recipients cannot be read."""
        try:
            return self.match_action(line, index)
        except ScriptParseError:
            return None


def _check_names(agent_names: Sequence[str]) -> None:
    if len(agent_names) < 2:
        raise ValueError(f"a script needs at least two participants, got {list(agent_names)}")
    for name in agent_names:
        if not name or name != name.strip() or "\n" in name:
            raise ValueError(f"participant names must be non-blank single lines: {name!r}")
    if len(set(agent_names)) != len(agent_names):
        raise ValueError(f"participant names must be distinct: {list(agent_names)}")


@dataclass(frozen=True)
class ParsedScript:
    """A script's actions, and notes on the lines it skipped or read with a caveat."""

    actions: list[ScriptAction]
    notes: list[ScriptNote]

    @property
    def warnings(self) -> list[ScriptNote]:
        """The notes that say something may be missing from the actions."""
        return [note for note in self.notes if note.severity == "warning"]


def parse_script_notes(text: str, agent_names: Sequence[str]) -> ParsedScript:
    """`parse_script`, with the notes: titles, scene headings and narration skipped,
    delivery cues left out of speech, and warnings for what could not be read."""
    _check_names(agent_names)
    parser = _Parser(text, agent_names, check_recipients=True)
    return ParsedScript(parser.run(), parser.notes)


def parse_script(text: str, agent_names: Sequence[str]) -> list[ScriptAction]:
    """Parse a script by the participants `agent_names` (at least two) into its actions.

    Raises `ScriptParseError` (a `ValueError`) at the first line it cannot read; see
    `parse_script_notes` for what it skipped or read with a caveat.
    """
    return parse_script_notes(text, agent_names).actions


def script_context(text: str, agent_names: Sequence[str]) -> list[str]:
    """The lines of the context preamble that `parse_script` skips: those before the first
    turn header, or before the first action by one of `agent_names` in a script without
    headers. Line ends are read as the parser reads them, so item `i` is line `i + 1`."""
    parser = _Parser(text, agent_names, check_recipients=False)
    return parser.lines[: parser.context_end()]


def split_turns(text: str, agent_names: Sequence[str] | None = None) -> list[str]:
    """The text of each turn: a header with its actions, or one action when headerless.

    Speech is never split, even when it contains `Turn #N` lines. Without `agent_names`
    the speakers are inferred from the script's action lines.
    """
    names = list(agent_names) if agent_names is not None else infer_speakers(text)
    parser = _Parser(text, names, check_recipients=agent_names is not None)
    parser.run()
    return ["\n".join(parser.lines[first : last + 1]).strip() for first, last in parser.spans]


def parse_dialogue(dialogue: str, agent_names: Sequence[str] | None = None) -> ScriptAction:
    """Parse one action, its `Turn` header optional; raises unless there is exactly one.

    Without `agent_names` the speaker is read from the line (and recipients are unchecked).
    """
    names = list(agent_names) if agent_names is not None else infer_speakers(dialogue)
    actions = _Parser(dialogue, names, check_recipients=agent_names is not None).run()
    if len(actions) != 1:
        raise ScriptParseError(f"expected a single action, found {len(actions)}")
    return actions[0]
