"""Screenplay conventions, as people write scripts: who a speaker label or a stage
direction names, what a cue in parentheses or brackets means, and which lines are titles
or scene headings.

Pure functions over one line or one speech; the parser (`script_lines.py`,
`screenplay_lines.py`) decides where they apply. Names are read in any case, by a
participant's full name or by a first name only one of them has. Cues: `(CONT'D)`,
`(O.S.)`, `(V.O.)` and the like mean nothing to the conversation; a whisper or an aside
to someone (`(whispering to X)`, `[whispers to X]`, `(aside, to X)`) makes what follows
private to them; `(to X)` is said aloud; anything else is a delivery cue, which is not
part of the speech.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from sotopia_are import SotopiaAreError

from .action import ActionType, match_participant, validate_recipients

__all__ = [
    "CueError",
    "Direction",
    "Part",
    "Remark",
    "ScriptNote",
    "Severity",
    "Speech",
    "Spellings",
    "bare_label",
    "heading_kind",
    "is_caps",
    "label_cues",
    "mentions",
    "name_at",
    "read_cues",
    "read_direction",
    "read_speech",
    "spellings",
    "whisper_cues",
]

Severity = Literal["note", "warning"]
Remark = tuple[Severity, str]
"""A note or warning about a line, before the parser gives it the line's number."""

_CUE = re.compile(r"\(([^()\n]*)\)|\[([^\[\]\n]*)\]")
# A bracket group that is one of the script's own forms, not a cue.
_FORM = re.compile(
    r"\[\s*(?:private\s+to\b|action\]|non-verbal communication\]|speak\])", re.IGNORECASE
)
_EXTENSION = re.compile(
    r"(?:cont(?:['\u2019]?d|\.|inued|inuing)?|more|o\.?\s?s\.?|v\.?\s?o\.?|o\.?\s?c\.?"
    r"|off(?:-?screen)?|on (?:the )?phone|into (?:the )?phone|filtered|pre-?lap)",
    re.IGNORECASE,
)
_WHISPER = re.compile(
    r"\b(?:whisper\w*|aside|murmur\w*|mutter\w*|sotto voce|under (?:his|her|their|my) breath"
    r"|privately|confidentially)\b",
    re.IGNORECASE,
)
_WHISPER_TO = re.compile(
    r"\bto\s+(?P<who>[^,;:.!?]+)|\b(?:in|into)\s+(?P<ear>.+?)['\u2019]s?\s+ear"
)
_ALOUD = re.compile(
    r"(?:to\s+(?P<who>[^,;:.!?]+?)|aloud|out loud|normally)\s*[.!]?",
    re.IGNORECASE,
)
_EVERYONE = {"all", "everyone", "everybody", "the room", "the group", "the others", "them"}
_SEPARATOR = re.compile(r"\s*(?:,|&|\band\b)\s*", re.IGNORECASE)

_HEADING = re.compile(
    r"(?:(?:int|ext|int\.?\s*/\s*ext|ext\.?\s*/\s*int|i\s*/\s*e|est)[.\s]"
    r"|(?:scene|act|part|chapter)\s+(?:\d+|[ivxlc]+|one|two|three|four|five|six|seven|eight"
    r"|nine|ten)\b)",
    re.IGNORECASE,
)
_TRANSITION = re.compile(
    r"(?:fade (?:in|out|to black)|fade to|cut to|dissolve to|smash cut(?: to)?|match cut"
    r"(?: to)?|the end|end(?: of)? scene|curtain|blackout|lights (?:up|down))"
    r"\s*[:.]?",
    re.IGNORECASE,
)

_LEAVING = re.compile(
    r"(?:exits|exit|departs|walks out|storms out|walks off|storms off|walks away|goes out"
    r"|hangs up|logs off)\b",
    re.IGNORECASE,
)
# `leaves` is leaving when nothing follows it, or a place or a manner does; `leaves a
# note` is an action.
_LEAVES = re.compile(
    r"leaves\s*(?:$|[,;.!\-\u2014]|(?:without|through|with|for|in|and|quickly|abruptly)\b"
    r"|(?:the\s+)?(?:room|scene|stage|conversation|table|building|house|office|kitchen"
    r"|meeting|call|party|group|caf[e\u00e9]|bar|shop|break room)\b)",
    re.IGNORECASE,
)
_NON_VERBAL = frozenset(
    [
        "sighs",
        "nods",
        "smiles",
        "shrugs",
        "frowns",
        "laughs",
        "chuckles",
        "giggles",
        "winks",
        "glances",
        "glares",
        "stares",
        "looks",
        "grins",
        "smirks",
        "scowls",
        "blushes",
        "groans",
        "scoffs",
        "snorts",
        "winces",
        "grimaces",
        "hesitates",
        "pauses",
        "rolls",
        "raises",
        "shakes",
        "waves",
        "gestures",
        "points",
        "gasps",
        "cries",
        "sobs",
        "yawns",
        "beams",
        "flinches",
        "stiffens",
        "fidgets",
        "squirms",
        "bristles",
        "tenses",
        "shudders",
        "clears",
        "coughs",
        "whistles",
        "hums",
        "crosses",
        "folds",
        "eyes",
        "watches",
        "ignores",
        "rubs",
        "bites",
    ]
)


@dataclass(frozen=True)
class ScriptNote:
    """What the parser skipped or read with a caveat, at a 1-based line: a `note` (a
    title, a scene heading, a delivery cue left out of the speech) or a `warning` (a cue
    or a line it could not read, which the conversation may be missing)."""

    line: int
    message: str
    severity: Severity = "note"

    def __str__(self) -> str:
        return f"{self.severity}: line {self.line}: {self.message}"


class CueError(SotopiaAreError, ValueError):
    """A cue or label that cannot be read without a guess that could leak a secret or
    invent a speaker (a whisper to no participant); the parser reports it at its line."""


Spellings = list[tuple[re.Pattern[str], str]]
"""How a line may name each participant (a pattern matching at the line's start, and
the participant), longest spelling first."""


def spellings(names: Sequence[str]) -> Spellings:
    """Every participant's full name, and each first name only one participant has (and
    that is no one's full name), any case, longest first."""
    firsts = [name.split()[0].casefold() for name in names]
    fulls = {name.casefold() for name in names}
    written = [(name, name) for name in names]
    written += [
        (name.split()[0], name)
        for name, first in zip(names, firsts, strict=True)
        if " " in name and firsts.count(first) == 1 and first not in fulls
    ]
    written.sort(key=lambda item: len(item[0]), reverse=True)
    return [
        (re.compile(r"\s+".join(map(re.escape, spelling.split())), re.IGNORECASE), name)
        for spelling, name in written
    ]


def name_at(text: str, known: Spellings, pos: int = 0) -> tuple[str, int] | None:
    """The participant whose name `text` starts with at `pos` (followed by the end, space,
    `:`, `,`, `(` or `[`), and the index after the name."""
    for pattern, name in known:
        match = pattern.match(text, pos)
        if match is not None and (match.end() == len(text) or text[match.end()] in " \t:,(["):
            return name, match.end()
    return None


def mentions(text: str, known: Spellings) -> list[str]:
    """The participants that `text` names anywhere, as whole words, in order of names."""
    found: dict[str, None] = {}
    for pattern, name in known:
        if re.search(rf"(?<!\w){pattern.pattern}(?!\w)", text, re.IGNORECASE):
            found.setdefault(name, None)
    return list(found)


def label_cues(line: str, pos: int) -> tuple[int, list[str]]:
    """Skip the cue groups after a label's name (`MARCUS (CONT'D)`, `DANA [whispers to
    X]`), but not the script's own bracket forms; `(end, the cues' texts)`."""
    cues: list[str] = []
    while True:
        stripped = len(line) - len(line[pos:].lstrip())
        match = _CUE.match(line, stripped)
        if match is None or _FORM.match(line, stripped):
            return pos, cues
        cues.append(_cue_text(match))
        pos = match.end()


def bare_label(line: str, known: Spellings) -> tuple[str, list[str]] | None:
    """`(participant, cues)` when `line` is nothing but a speaker label: a name, cues,
    and at most a colon (`LUCIA`, `MARCUS (CONT'D)`, `Dana:`)."""
    found = name_at(line, known)
    if found is None:
        return None
    name, pos = found
    pos, cues = label_cues(line, pos)
    return (name, cues) if re.fullmatch(r"\s*:?\s*", line[pos:]) else None


def is_caps(text: str) -> bool:
    """Whether `text` has letters and all of them are capitals (`THE LATE SHIFT`)."""
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and all(c.isupper() for c in letters if c.lower() != c.upper())


def heading_kind(line: str) -> str | None:
    """`'scene heading'` (`INT. CAFE - DAY`, `Scene 1`), `'transition'` (`FADE IN:`,
    `CUT TO:`) or None."""
    if _HEADING.match(line):
        return "scene heading"
    if _TRANSITION.fullmatch(line.strip()):
        return "transition"
    return None


@dataclass(frozen=True)
class Part:
    """One action read from a speech: what kind, its argument and its recipients."""

    kind: ActionType
    argument: str
    to: list[str] | None = None


@dataclass
class Speech:
    """A speech read with its cues: its actions, and notes `(severity, message)`."""

    parts: list[Part] = field(default_factory=list)
    notes: list[Remark] = field(default_factory=list)


@dataclass
class _Segment:
    to: list[str] | None
    text: list[str] = field(default_factory=list)
    cues: list[str] = field(default_factory=list)

    def spoken(self) -> str:
        """The text said, without the cues between its pieces and without blank lines."""
        joined = " ".join(piece.strip(" \t") for piece in self.text if piece.strip(" \t"))
        lines = (line.strip() for line in joined.split("\n"))
        return _unquoted("\n".join(line for line in lines if line))


def read_speech(text: str, speaker: str, names: Sequence[str], cues: Sequence[str] = ()) -> Speech:
    """`text` spoken by `speaker`, its cues read: `cues` (from the label) come first.

    A whisper cue makes what follows private (a new action if something was said before
    it); `(to X)` or `(aloud)` makes what follows public again; other cues are left out
    with a note. Cues alone, with nothing said, are a non-verbal communication. Raises
    `CueError` for a whisper to no participant.
    """
    speech = Speech()
    segments = [_Segment(None)]
    pieces: list[tuple[bool, str]] = [(True, cue) for cue in cues]  # (is a cue, its text)
    position = 0
    for match in _CUE.finditer(text):
        pieces += [(False, text[position : match.start()]), (True, _cue_text(match))]
        position = match.end()
    pieces.append((False, text[position:]))
    for is_cue, piece in pieces:
        if is_cue:
            _read_cue(piece, speaker, names, segments, speech)
            continue
        segments[-1].text.append(piece)
        if re.search(r"[()\[\]]", piece):
            speech.notes.append(
                ("warning", f"an unmatched bracket in {piece.strip()!r} is kept as speech")
            )
    said = [segment for segment in segments if segment.spoken()]
    if not said:
        described = "; ".join(cue for segment in segments for cue in segment.cues)
        if described:
            to = next((s.to for s in reversed(segments) if s.to), None)
            speech.parts.append(Part("non-verbal communication", described, to))
            speech.notes = [n for n in speech.notes if n[0] == "warning"]
        return speech
    for segment in segments:
        if not segment.spoken() and segment.to and segment is not segments[0]:
            speech.notes.append(
                ("warning", f"nothing is said after the cue to {', '.join(segment.to)}")
            )
    speech.parts += [Part("speak", segment.spoken(), segment.to) for segment in said]
    return speech


def whisper_cues(text: str) -> list[str]:
    """The whisper and aside cues in parentheses or brackets in `text`."""
    cues = (_cue_text(match) for match in _CUE.finditer(text))
    return [cue for cue in cues if _WHISPER.search(cue)]


def read_cues(
    cues: Sequence[str], speaker: str, names: Sequence[str]
) -> tuple[list[str] | None, list[Remark]]:
    """What the cues after a label mean for an action written in another form (`DANA
    (whispering to Lucia) said: "…"`): the whisper's recipients (None: public), and notes.
    Raises `CueError` as `read_speech` does."""
    segments, speech = [_Segment(None)], Speech()
    for cue in cues:
        _read_cue(cue, speaker, names, segments, speech)
    return segments[-1].to, speech.notes


def _read_cue(
    cue: str,
    speaker: str,
    names: Sequence[str],
    segments: list[_Segment],
    speech: Speech,
) -> None:
    current = segments[-1]
    if not cue or _EXTENSION.fullmatch(cue.rstrip(".")):
        return
    if _WHISPER.search(cue):
        to = _whisper_recipients(cue, speaker, names)
        if to is None:
            current.cues.append(cue)
            others = len(names) > 2
            speech.notes.append(
                (
                    "warning" if others else "note",
                    f"the cue '({cue})' names no one to whisper to, so the line is public"
                    + ("; write '(whispering to NAME)' to make it private" if others else ""),
                )
            )
            return
        if current.spoken() and current.to != to:
            segments.append(_Segment(to, cues=[cue]))
        else:
            current.to = to
            current.cues.append(cue)
        return
    aloud = _ALOUD.fullmatch(cue)
    if aloud is not None:
        who = aloud["who"]
        if who and who.casefold() not in _EVERYONE and not _participants(who, names):
            speech.notes.append(("warning", f"the cue '({cue})' names no participant"))
        if current.to is not None and current.spoken():
            segments.append(_Segment(None, cues=[cue]))
            return
        current.to = None
    current.cues.append(cue)
    speech.notes.append(("note", f"the delivery cue '({cue})' is not part of the speech"))


def _whisper_recipients(cue: str, speaker: str, names: Sequence[str]) -> list[str] | None:
    match = _WHISPER_TO.search(cue)
    if match is None:
        return None
    who = (match["who"] or match["ear"]).strip()
    found = _participants(who, names)
    if found is None:
        raise CueError(
            f"the cue '({cue})' whispers to {who!r}, who is not a participant "
            f"(participants: {', '.join(names)}); name who hears it"
        )
    try:
        return validate_recipients(found, names, speaker)
    except ValueError as exc:
        raise CueError(f"the cue '({cue})': {exc}") from None


def _participants(who: str, names: Sequence[str]) -> list[str] | None:
    """The participants `who` lists (`Lucia`, `LUCIA and Marcus`), or None if any part
    names no one."""
    found: list[str] = []
    for part in _SEPARATOR.split(who.strip()):
        if not part:
            continue
        name = match_participant(re.sub(r"^(?:both|the)\s+", "", part, flags=re.I), names)
        if name is None:
            return None
        if name not in found:
            found.append(name)
    return found or None


@dataclass(frozen=True)
class Direction:
    """A stage direction read: the participant it is about (None: no one), the action,
    and a warning when it names participants but cannot be read as one's action."""

    speaker: str | None
    part: Part | None
    warning: str | None = None


def read_direction(text: str, known: Spellings) -> Direction:
    """A stage direction or a line of narration (parentheses already removed): the
    action of the participant it starts with (`MARCUS sighs and …` is non-verbal,
    `LUCIA exits.`, `Lucia leaves.` are leaving); a name must be written with a capital,
    and a capitalised word after a first name is someone else's surname."""
    text = text.strip()
    named = mentions(text, known)
    found = name_at(text, known)
    if found is not None and text[:1].isupper():
        speaker, end = found
        rest = text[end:].lstrip(" \t,")
        first_word = rest.split(maxsplit=1)[0] if rest else ""
        surname = first_word[:1].isupper() and not is_caps(text[:end] + " " + first_word)
        if rest and not surname:
            if re.match(r"(?:and|&)\s", rest, re.IGNORECASE) and len(named) > 1:
                return Direction(
                    None,
                    None,
                    f"a stage direction about {' and '.join(named)}; write it for one of "
                    "them, or as each one's own line",
                )
            return Direction(speaker, _direction_part(rest))
    if named:
        return Direction(
            None,
            None,
            f"it names {', '.join(named)} but does not start with who acts (start it "
            "with the participant's name to make it their action)",
        )
    return Direction(None, None)


def _direction_part(rest: str) -> Part:
    description = rest.strip().removesuffix(".").rstrip()
    if _LEAVING.match(description) or _LEAVES.match(description):
        return Part("leave", "")
    verb = description.split(maxsplit=1)[0].casefold().strip(",;")
    kind: ActionType = "non-verbal communication" if verb in _NON_VERBAL else "action"
    return Part(kind, " ".join(description.split()))


def _cue_text(match: re.Match[str]) -> str:
    inner = match[1] if match[1] is not None else match[2]
    return " ".join(inner.replace("\u2019", "'").split())


def _unquoted(text: str) -> str:
    """`text` without quotes around the whole of it (`"Fine."` → `Fine.`)."""
    for opening, closing in (('"', '"'), ("\u201c", "\u201d")):
        inner = text[1:-1]
        quoted = len(text) >= 2 and text[0] == opening and text[-1] == closing
        if quoted and opening not in inner and closing not in inner:
            return inner
    return text
