"""Screenplay lines: how the parser reads a script written as a screenplay.

A speaker label may name a participant in any case, by full or unique first name, with
cues after it (`MARCUS (CONT'D):`); cues in unquoted `Name: text` speech are read (a
whisper makes it private, a delivery cue is left out; see :mod:`.screenplay`). In a
script without headers, a label may stand on its own line above its speech (to a blank
line), a stage direction that starts with a participant is that participant's action, and
titles, scene headings and narration naming no one are skipped. What is skipped or read
with a caveat is a `ScriptNote`; a label naming no participant, or a whisper to no one,
is an error at its line.
"""

import re

from .parse_error import ScriptParseError
from .screenplay import (
    Direction,
    Severity,
    bare_label,
    heading_kind,
    is_caps,
    name_at,
    read_direction,
    read_speech,
    whisper_cues,
)
from .script_lines import ACTION_LIKE, SCREENPLAY_LIKE, LineReader, Reading, strip_markers

__all__ = ["ScreenplayLines", "screenplay_speakers"]


# A line in parentheses or brackets: a stage direction (or a cue on its own line).
_STAGE = re.compile(r"\((.*)\)\.?|\[(.*)\]\.?")
_CUES = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
# What follows a participant's name in a script form gone wrong (a missing colon, a
# misspelt kind): an error, never narration.
_BROKEN_FORM = re.compile(r"\s*(?:said\b|says\s*:|\[|[\"\u201c])", re.IGNORECASE)
_BYLINE = re.compile(r"(?:written\s+)?by\s", re.IGNORECASE)
# At most this many words make a speaker label on its own line in capitals.
_LABEL_WORDS = 3


def screenplay_speakers(lines: list[str]) -> list[str]:
    """The speaker labels of a screenplay, first spelling of each name (any case)."""
    found: dict[str, str] = {}
    for index, raw in enumerate(lines):
        line = strip_markers(raw).strip()
        if not line or heading_kind(line):
            continue
        name = _CUES.sub("", line).strip()
        if labelled := SCREENPLAY_LIKE.match(line):
            name = _CUES.sub("", labelled["name"]).strip()
        elif not is_caps(line):
            continue
        below = strip_markers(lines[index + 1]).strip() if index + 1 < len(lines) else ""
        bare = labelled is None and not (_CUES.search(line) or (below and not _BYLINE.match(below)))
        if name and len(name.split()) <= _LABEL_WORDS and not bare:
            found.setdefault(name.casefold(), name)
    return list(found.values())


class ScreenplayLines(LineReader):
    """Reading the lines of a script without turn headers as a screenplay's."""

    def _screenplay(self, index: int, started: bool) -> Reading | None:
        """What line `index` is as a screenplay line (`started`: after the first action):
        a label on its own line with the speech below, a stage direction or narration that
        starts with a participant (their action), or a title, scene heading or narration
        skipped with a note. None for a line that is an error as an action (`Eve said: …`
        or a form gone wrong, `Bob said "…"`). Raises for a label that names no participant."""
        line = strip_markers(self.lines[index]).strip()
        if ACTION_LIKE.match(line) or self._broken_form(line):
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
        if labelled := SCREENPLAY_LIKE.match(line):
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

    def _acted(self, direction: Direction, text: str, index: int) -> Reading | None:
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
        return Reading(direction.speaker, [direction.part], [], index)

    def _broken_form(self, line: str) -> bool:
        """Whether `line` starts with a participant and then one of the script's forms gone
        wrong (`Bob said "hi"`, `Bob [acton] waves`), an error rather than narration."""
        found = name_at(line, self.known)
        return found is not None and _BROKEN_FORM.match(line[found[1] :]) is not None

    def _below_label(self, index: int, speaker: str, cues: list[str]) -> Reading:
        """The speech below a label on its own line: the lines up to a blank one or to a
        line that starts something else (cues in parentheses on their own lines included)."""
        last = index
        for following in range(index + 1, len(self.lines)):
            text = strip_markers(self.lines[following]).strip()
            if not text or self._ends_speech_block(text, following):
                break
            last = following
        below = "\n".join(strip_markers(line).strip() for line in self.lines[index + 1 : last + 1])
        speech = self._read(lambda: read_speech(below, speaker, self.names, cues), index)
        if not speech.parts:
            line = self.lines[index].strip()
            return self._skipped(
                index, f"the label {line!r} has no speech below it; skipped", "warning"
            )
        return Reading(speaker, speech.parts, speech.notes, last)

    def _ends_speech_block(self, text: str, index: int) -> bool:
        """Whether `text` (line `index`, under a label) starts something else than speech:
        a heading, a label, an action, or a stage direction that starts with a participant."""
        if heading_kind(text) or bare_label(text, self.known) or ACTION_LIKE.match(text):
            return True
        if self._try_match(text, index) is not None:
            return True
        if stage := _STAGE.fullmatch(text):
            return read_direction(stage[1] or stage[2], self.known).speaker is not None
        labelled = SCREENPLAY_LIKE.match(text)
        return labelled is not None and is_caps(_CUES.sub("", labelled["name"]))

    def _labels_speech(self, line: str, index: int) -> bool:
        """Whether the capitals `line` is a speaker label (a screenplay extension such as
        `(O.S.)`, or text right below it) rather than a title (a blank line, a byline, a
        heading or a participant's line below it)."""
        if _CUES.search(line):
            return True
        if index + 1 >= len(self.lines):
            return False
        below = strip_markers(self.lines[index + 1]).strip()
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

    def _skipped(self, index: int, message: str, severity: Severity = "note") -> Reading:
        return Reading("", [], [(severity, message)], index)
