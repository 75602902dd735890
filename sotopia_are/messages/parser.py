"""Parse human-written conversation scripts into `(speaker, AgentAction)` pairs.

A line-oriented state machine that knows the participants' names. It reads a context
preamble, `Turn #N` headers (alone or followed by the action, `Turn 1:`, `Turn #2`, any mix
in one script), headerless screenplays, all five action kinds in Sotopia's rendered form
and their colon forms, private actions, and quoted speech that runs over several lines —
even speech that itself contains `Turn #N:` lines. Anything else is a `ScriptParseError`
naming the line. It never guesses a speaker. Its parts: the grammar of a line
(:mod:`.script_lines`), where quoted speech ends (:mod:`.quoted_speech`) and screenplay
lines (:mod:`.screenplay_lines`); this module runs the pass over the script.

In a script with turn headers, the lines before the first header are its context:
screenplay-looking lines there (`Alice: a baker, 30`) describe people, they are not speech.
An unambiguous action before the first header (`Alice said: "…"`, `Alice [action] …`,
`Alice did nothing`, `Alice left the conversation`, with or without `:` or a private
prefix) means headerless actions and headers are mixed; that is an error at its line
rather than a guess at its turn. A script with no header at all starts at its first action.
What is skipped or read with a caveat is a `ScriptNote` (`parse_script_notes`).
"""

from collections.abc import Sequence
from dataclasses import dataclass

from .action import AgentAction
from .parse_error import ScriptParseError
from .quoted_speech import QuotedSpeech, unreadable_speech
from .screenplay import Part, ScriptNote
from .screenplay_lines import ScreenplayLines, screenplay_speakers
from .script_lines import ACTION_LIKE, HEADER, SCREENPLAY_LIKE, ActionStart, Reading, strip_markers

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


@dataclass(frozen=True)
class ScriptAction:
    """One parsed action: who did it, what, under which turn header, from which line."""

    speaker: str
    action: AgentAction
    turn: int | None
    """The number of the `Turn` header above the action, or None in a headerless script."""
    line: int
    """The 1-based line where the action starts."""


def infer_speakers(text: str) -> list[str]:
    """The names that start action lines of `text` (`Name said: …`, `Name [action] …`, …).

    For the Sotopia methods that take no participant list; parsing proper needs the names.
    A script with no such line is read as a screenplay: its speaker labels, as written
    (`DANA:`, `MARCUS (CONT'D):`, `LUCIA` on its own line above speech).
    """
    found: dict[str, None] = {}
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for raw in lines:
        line = strip_markers(raw)
        if header := HEADER.match(line):
            line = line[header.end() :]
        if match := ACTION_LIKE.match(line):
            found.setdefault(match["name"].strip(), None)
    return list(found) or screenplay_speakers(lines)


class _Parser(QuotedSpeech, ScreenplayLines):
    """One pass over a script's lines (looking one step ahead where quoted speech may
    end); `run` returns the actions and the turn spans."""

    def __init__(self, text: str, agent_names: Sequence[str], check_recipients: bool) -> None:
        super().__init__(text, agent_names, check_recipients)
        self.started = False
        self.actions: list[ScriptAction] = []
        self.notes: list[ScriptNote] = []
        self.spans: list[list[int]] = []  # [first, last] line index of each turn's text

    # -- the main loop ---------------------------------------------------------------------

    def run(self) -> list[ScriptAction]:
        index = 0
        while index < len(self.lines):
            # Not right-stripped: quoted speech keeps its trailing spaces.
            line = strip_markers(self.lines[index])
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
            if self.started or ACTION_LIKE.match(line.rstrip()):
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
            line = strip_markers(raw)
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
        match = ACTION_LIKE.match(line) or (self.started and SCREENPLAY_LIKE.match(line))
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

    def _take(self, start: ActionStart, line: str, index: int) -> int:
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
        return self._take_reading(Reading(start.speaker, parts, list(start.notes), last), index)

    def _take_reading(self, reading: Reading, index: int) -> int:
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
