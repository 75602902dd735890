"""Where quoted speech ends, when it runs over several lines.

Quoted speech ends at the first line ending in its closing quote that is followed
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
"""

import re
from typing import Literal

from .script_lines import ACTION_LIKE, HEADER, TRAILING, ActionStart, LineReader, strip_markers

__all__ = ["QuotedSpeech", "unreadable_speech"]

# A line that ends like `Name did nothing` for some name; with a `:` or `[` after the first
# character, this is every line that can start an action for some list of participants.
_ENDS_LIKE_ACTION = re.compile(
    rf"\S.*\s(?:did nothing|left the conversation){TRAILING}", re.IGNORECASE
)
# A superset of the lines that read as an explicit action (see `ActionStart.explicit`) for some
# participant names: `said:`, a bracketed kind or private prefix, or `Name: "quoted"`.
_EXPLICIT_LIKE = re.compile(
    r"said\s*:|\[\s*(?:action|non-verbal communication|private\s+to)|:\s*[\"\u201c]",
    re.IGNORECASE,
)
# What may follow a closing quote: one `,` (an artifact of transcripts exported from JSON
# lists), or in the colon form, where people write `Name: "Hi".`, any of `,` `.` `;`.
_AFTER_QUOTE = re.compile(r",?$")
_AFTER_QUOTE_COLON = re.compile(rf"{TRAILING}$")

# A well-formed next step: the action it starts (None for a bare header), the text the
# action starts in (the line, or what follows its header) and the turn it belongs to.
_Step = tuple[ActionStart | None, str, int | None]


def _closing(text: str, closer: str = '"', colon: bool = False) -> str:
    """`text` up to and including a closing quote at its end (allowing what
    `_AFTER_QUOTE`, or `_AFTER_QUOTE_COLON` in the colon form, allows after it), or ""
    when it does not end in a quote."""
    text = text.rstrip()
    after = (_AFTER_QUOTE_COLON if colon else _AFTER_QUOTE).search(text)
    assert after is not None  # both patterns match the empty end of any text
    text = text[: after.start()]
    return text if text.endswith(closer) else ""


def _bare_header(line: str) -> bool:
    # `Turn #N` with nothing after it: in a `Turn #N` (block) script it starts the next
    # turn even inside quoted speech.
    line = strip_markers(line).rstrip()
    match = HEADER.match(line)
    return match is not None and match.end() == len(line)


def _could_start_action(line: str) -> bool:
    """Whether `line` starts an action for some list of participants (a superset of what
    `LineReader.match_action` accepts for any names: names are non-blank, and the action
    after one starts with `:`, `[`, `said:` or is `did nothing`/`left the conversation`)."""
    line = strip_markers(line).rstrip()
    return ":" in line[1:] or "[" in line[1:] or _ENDS_LIKE_ACTION.fullmatch(line) is not None


def _could_start_turn(line: str) -> bool:
    """Whether `line` is a turn header followed by what could start an action for some
    participant names (a superset of the headers `QuotedSpeech._well_formed_step` accepts)."""
    line = strip_markers(line)
    header = HEADER.match(line)
    return header is not None and _could_start_action(line[header.end() :])


def unreadable_speech(speech: str) -> str | None:
    """Why `speech` rendered as `Name said: "…"` in a `Turn #N` script would not read back
    as itself, whoever the participants are; None when it reads back exactly.

    Quoted speech ends at a line ending in `"` that is followed by a participant's action,
    a `Turn #N` line alone or with an action starts the next turn, and a closing line that
    reads as an explicit action of its own is an error. The participants are not known here, so any
    line that could be such an action for some name counts as one.
    """
    if "\n" not in speech:
        # One line: it opens the speech and closes it, nothing follows it (the loop below
        # checks no line of it). Most speech is one line, and it is asked three times a turn.
        return None
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


class QuotedSpeech(LineReader):
    """Finding where quoted speech that opened on a line closes (see the module doc)."""

    def _quoted(self, start: ActionStart, first: str, index: int) -> tuple[int, str]:
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

    def _closed_at(self, start: ActionStart, first: str, index: int, end: int) -> tuple[int, str]:
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

    def _starts_next_turn(self, index: int, start: ActionStart, turn: int | None) -> bool:
        """Whether line `index`, inside `start`'s quoted speech in turn `turn`, starts the
        next turn for sure, so the speech never spans it: a bare `Turn #N` line; a header
        numbered above `turn` with a participant's action, unless the line before it ends
        in the closing quote (then it may end the speech, or be quoted, see `_quoted`); in a
        script without headers, any action."""
        line = strip_markers(self.lines[index])
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
        header = self.header(strip_markers(self.lines[following]))
        return "weak" if header is not None or found is not None else "none"

    def _stranger_action(self, index: int, turn: int | None) -> bool:
        """Whether line `index` is an explicit action (`Bobb said: "…"`, maybe under a header
        numbered above `turn`) by someone who is not a participant. Speech ends before it,
        so that it is an error at its line rather than speech that swallowed a misspelt
        name. Only called where `_well_formed_step` found no step at `index`."""
        line = strip_markers(self.lines[index])
        header = self.header(line)
        if header is not None:
            line = header[1] if turn is None or header[0] > turn else ""
        return ACTION_LIKE.match(line.rstrip()) is not None

    def _next_text_line(self, index: int) -> int | None:
        """The index of the first non-blank line after `index`, if any."""
        return next((i for i in range(index + 1, len(self.lines)) if self.lines[i].strip()), None)

    def _well_formed_step(
        self, index: int, turn: int | None, *, same_turn: bool = False
    ) -> _Step | None:
        """What line `index` starts, if it is a well-formed next step after turn `turn`: a
        participant's action, or a header numbered above `turn` (or equal to it, with
        `same_turn`) with nothing or with a participant's action after it."""
        line = strip_markers(self.lines[index])
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

    def _plain_close(
        self, start: ActionStart, first: str, index: int, turn: int | None
    ) -> int | None:
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
