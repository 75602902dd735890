"""Read a script's context preamble back into a `ScriptBackground`.

Real Sotopia transcripts open with the context their agents saw, before the first turn —
the part `parse_script` skips (`script_context` says where it ends). Two layouts are read:

* Sotopia's rendered text, what `ScriptBackground.to_natural_language()` writes, after any
  intro lines (`Prompt after formatting:`, `Here is the context of this interaction:`):
  `Scenario: …`, `Participants: A and B` (or `A, B and C`), then `<Name>'s background: …`
  and `<Name>'s goal: …` lines. A value runs on over the lines up to the next label, so
  multi-line values come back joined by newlines. Goals keep any `(Extra information: …)`
  and `Hint: …` text as written.
* SOTOPIA-RL's markdown: a `# Scenario` section (its `**Codename:**` line is metadata, not
  scenario), `## Agents Background` with a `**Name**` line above each background, and
  `## Social Goals` with `- **Name**: goal` items, which also give the participants' order.

What the rendering loses does not come back: values are stripped of whitespace at their
ends; a background rendered as `Unknown` (Sotopia's word for an empty one when another
participant's is known) comes back as "", and so does a background that was literally
`Unknown`; a background with no line (Sotopia writes none when all are empty) is "".
Without `agent_names`, the `Participants:` line is split at `, ` and ` and `, so names
containing those need `agent_names` to be read.
"""

import re
from collections.abc import Sequence

from .background import ScriptBackground, join_names
from .parser import ScriptParseError, script_context

__all__ = ["parse_background"]

_SCENARIO = re.compile(r"scenario\s*:\s*", re.IGNORECASE)
_PARTICIPANTS = re.compile(r"participants\s*:\s*", re.IGNORECASE)
_NAME_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+")
_FIELDS = ("background", "goal")
# Sotopia's word for a background it does not show.
_UNKNOWN = "Unknown"

_HEADING = re.compile(r"#{1,6}\s+(?P<title>.*?)\s*#*\s*$")
_BOLD_NAME = re.compile(r"\*\*(?P<name>[^*]+?)\*\*\s*:?")
_GOAL_ITEM = re.compile(r"[-*+]\s+\*\*(?P<name>[^*]+?)\*\*\s*:\s*(?P<goal>.*)")
_CODENAME = re.compile(r"\*\*\s*codename\s*:?\s*\*\*", re.IGNORECASE)

# (field, participant) → the lines of its value
_Values = dict[tuple[str, str], list[str]]


def parse_background(
    text: str, agent_names: Sequence[str] | None = None
) -> ScriptBackground | None:
    """The context of the script `text`, read from its preamble; None when it has none.

    The preamble is what precedes the first turn header or, in a script without headers,
    the first action by a participant (see the module docstring for the layouts). The
    participants are those it names, in its order; with `agent_names` given they must be
    exactly those. Raises `ScriptParseError`, with the line, for a preamble that names
    other participants than `agent_names`, fewer than two or the same one twice, gives a
    value twice, or lacks a participant's goal.
    """
    # Without names, only the headers mark the end; the preamble's own list of
    # participants then says whose action ends a script without headers.
    names = (
        list(agent_names) if agent_names is not None else _declared_names(script_context(text, []))
    )
    lines = script_context(text, names)
    if any(_PARTICIPANTS.match(line.strip()) for line in lines):
        return _read_rendered(lines, agent_names)
    if _markdown_goals(lines) is not None:
        return _read_markdown(lines, agent_names)
    return None


def _split_names(listed: str) -> list[str]:
    # The inverse of `join_names`; an Oxford comma (`A, B, and C`) is read too.
    return [name.strip() for name in _NAME_SEPARATOR.split(listed.strip())]


def _declared_names(lines: list[str]) -> list[str]:
    """The participants a preamble names, without checking them; [] when it names none."""
    for line in lines:
        if match := _PARTICIPANTS.match(line.strip()):
            return _split_names(line.strip()[match.end() :])
    goals = _markdown_goals(lines)
    return [] if goals is None else [name for _, name, _ in goals[1]]


def _check_participants(
    found: list[str], agent_names: Sequence[str] | None, listed: str, index: int, line: str
) -> list[str]:
    """The participants of a preamble, `found` in its line `index`; see `parse_background`."""
    if agent_names is not None:
        names = list(agent_names)
        # The rendered form of the given names settles names that contain `, ` or ` and `.
        if found != names and listed != join_names(names):
            raise ScriptParseError(
                f"the context names the participants {join_names(found)}, not {join_names(names)}",
                index + 1,
                line,
            )
        return names
    if len(found) < 2 or not all(found) or len(set(found)) != len(found):
        raise ScriptParseError(
            "expected two or more distinct participants, as 'A and B' or 'A, B and C'",
            index + 1,
            line,
        )
    return found


def _background(values: _Values, name: str) -> str:
    value = "\n".join(values.get(("background", name), [])).strip()
    return "" if value == _UNKNOWN else value


def _missing_goals(names: list[str], values: _Values, index: int, line: str) -> None:
    missing = [name for name in names if ("goal", name) not in values]
    if missing:
        raise ScriptParseError(
            f"the context gives no goal for {join_names(missing)}", index + 1, line
        )


# -- Sotopia's rendered text ---------------------------------------------------------------


def _label(line: str, by_length: list[str]) -> tuple[str, str, str] | None:
    """`(field, participant, value)` when `line` starts a labelled value."""
    if match := _SCENARIO.match(line):
        return "scenario", "", line[match.end() :]
    if match := _PARTICIPANTS.match(line):
        return "participants", "", line[match.end() :]
    for name in by_length:  # longest first: a name may be a prefix of another
        for field in _FIELDS:
            label = f"{name}'s {field}:"
            if line.startswith(label):
                return field, name, line[len(label) :]
    return None


def _read_rendered(lines: list[str], agent_names: Sequence[str] | None) -> ScriptBackground:
    at, listed = next(
        (index, label[2])
        for index, raw in enumerate(lines)
        if (label := _label(raw.strip(), [])) and label[0] == "participants"
    )
    line = lines[at].strip()
    names = _check_participants(_split_names(listed), agent_names, listed, at, line)
    by_length = sorted(names, key=len, reverse=True)
    values: _Values = {}
    current: tuple[str, str] | None = None  # lines before the first label are an intro
    for index, raw in enumerate(lines):
        label = _label(raw.strip(), by_length)
        if label is None:
            if current == ("participants", "") and raw.strip():
                raise ScriptParseError(
                    "cannot read this context line; expected 'Scenario:', "
                    "'<Name>'s background:' or '<Name>'s goal:'",
                    index + 1,
                    raw.strip(),
                )
            if current is not None:
                values[current].append(raw)
            continue
        field, name, value = label
        current = (field, name)
        if current in values:
            raise ScriptParseError(f"a second {field} line in the context", index + 1, raw.strip())
        values[current] = [value]
    _missing_goals(names, values, at, line)
    return ScriptBackground(
        scenario="\n".join(values.get(("scenario", ""), [])).strip(),
        agent_names=names,
        agent_backgrounds=[_background(values, name) for name in names],
        agent_goals=["\n".join(values[("goal", name)]).strip() for name in names],
    )


# -- SOTOPIA-RL's markdown -----------------------------------------------------------------


def _sections(lines: list[str]) -> dict[str, tuple[int, list[tuple[int, str]]]]:
    """Each markdown section by its lower-case title: its heading's index and its lines."""
    sections: dict[str, tuple[int, list[tuple[int, str]]]] = {}
    body: list[tuple[int, str]] | None = None
    for index, raw in enumerate(lines):
        if heading := _HEADING.fullmatch(raw.strip()):
            body = sections.setdefault(heading["title"].lower(), (index, []))[1]
        elif body is not None:
            body.append((index, raw))
    return sections


def _markdown_goals(lines: list[str]) -> tuple[int, list[tuple[int, str, list[str]]]] | None:
    """The `## Social Goals` heading's index and its items `(index, name, lines)`, or
    None without that section."""
    section = _sections(lines).get("social goals")
    if section is None:
        return None
    heading, body = section
    items: list[tuple[int, str, list[str]]] = []
    for index, raw in body:
        if item := _GOAL_ITEM.fullmatch(raw.strip()):
            items.append((index, item["name"].strip(), [item["goal"]]))
        elif items:
            items[-1][2].append(raw)
    return heading, items


def _read_markdown(lines: list[str], agent_names: Sequence[str] | None) -> ScriptBackground:
    sections = _sections(lines)
    goals = _markdown_goals(lines)
    assert goals is not None  # parse_background reads only a preamble that has them
    heading, items = goals
    found = [name for _, name, _ in items]
    names = _check_participants(
        found, agent_names, join_names(found), heading, lines[heading].strip()
    )
    values: _Values = {}
    for index, name, goal in items:
        if ("goal", name) in values:
            raise ScriptParseError(f"a second goal of {name}", index + 1, lines[index].strip())
        values[("goal", name)] = goal
    _missing_goals(names, values, heading, lines[heading].strip())
    _, backgrounds = sections.get("agents background", (0, []))
    current: tuple[str, str] | None = None
    for index, raw in backgrounds:
        if (bold := _BOLD_NAME.fullmatch(raw.strip())) is None:
            if current is not None:
                values[current].append(raw)
            continue
        name = bold["name"].strip()
        current = ("background", name)
        if name not in names:
            raise ScriptParseError(
                f"a background of {name!r}, who is not a participant ({join_names(names)})",
                index + 1,
                raw.strip(),
            )
        if current in values:
            raise ScriptParseError(f"a second background of {name}", index + 1, raw.strip())
        values[current] = []
    _, scenario = sections.get("scenario", (0, []))
    return ScriptBackground(
        scenario="\n".join(raw for _, raw in scenario if not _CODENAME.match(raw.strip())).strip(),
        agent_names=names,
        agent_backgrounds=[_background(values, name) for name in names],
        agent_goals=["\n".join(values[("goal", name)]).strip() for name in names],
    )
