"""Fuzzing the parser with scripts shaped like the real transcripts, with noise added.

Each script is built from one real transcript in tests/data/transcripts (its participants,
its context preamble, actions taken from it) in one of the shapes those files have, with
harmless noise (header styles, line endings, blank lines, trailing white space and
punctuation, markdown markers) and at most one corruption (a lost closing quote, a
misspelt name, a stray line, text after a quote). The law: the parse gives the intended
actions, or raises `ScriptParseError` naming a line of the script — never other actions.

SOTOPIA_ARE_FUZZ_EXAMPLES sets how many scripts (default 3000; nightly-style runs use
more, e.g. 50000).
"""

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sotopia_are.messages import AgentAction, ScriptParseError, parse_script, render_action
from sotopia_are.messages.parser import script_context

DATA = Path(__file__).parent.parent / "data" / "transcripts"
EXPECTED: dict[str, dict[str, list[str]]] = json.loads(
    (DATA / "expected.json").read_text(encoding="utf-8")
)
EXAMPLES = int(os.environ.get("SOTOPIA_ARE_FUZZ_EXAMPLES", "3000"))

Action = tuple[str, AgentAction]


def _material(stem: str) -> tuple[list[str], list[str], list[Action]]:
    """A transcript's participants, context lines and the actions the renderer accepts."""
    text = (DATA / f"{stem}.txt").read_text(encoding="utf-8")
    names = EXPECTED[stem]["agents"]
    actions = []
    for item in parse_script(text, names):
        try:
            render_action(item.speaker, item.action)
        except ValueError:
            continue  # e.g. speech embedding a whole transcript
        actions.append((item.speaker, item.action))
    return names, script_context(text, names), actions


MATERIAL = {stem: _material(stem) for stem in sorted(EXPECTED)}
WORDS = sorted({w for _, _, acts in MATERIAL.values() for _, a in acts for w in a.argument.split()})

# How each action is introduced: a header alone on its line or before the action ({n} is the
# turn number), or, in a script without headers, a markdown marker or nothing.
BLOCK_HEADERS = ["Turn #{n}\n", "Turn {n}:\n", "Turn #{n}:  \n", "turn {n}\n\n"]
INLINE_HEADERS = ["Turn #{n}: ", "Turn {n}: ", "> Turn #{n} - "]
HEADERLESS = ["", "> "]
ENDINGS = ["\n", "\r\n", "\r"]
JUNK = ["Bob shouts loudly", "lorem ipsum dolor", "Turn", "[action] waves", "Narrator: (pause)"]


@st.composite
def extra_actions(draw: st.DrawFn, names: list[str]) -> Action:
    """An action of a kind real transcripts rarely have, written from their words."""
    kind = draw(st.sampled_from(["none", "leave", "action", "non-verbal communication"]))
    text = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)))
    argument = text if kind in ("action", "non-verbal communication") else ""
    speaker = draw(st.sampled_from(names))
    return speaker, AgentAction(action_type=kind, argument=argument)


def colon_form(speaker: str, action: AgentAction, tail: str) -> str:
    """An action other than speech in the colon form people write (`Name: did nothing.`),
    with trailing punctuation where the action has no argument."""
    if action.action_type == "none":
        return f"{speaker}: did nothing{tail}"
    if action.action_type == "leave":
        return f"{speaker}: left the conversation{tail}"
    return f"{speaker}:{render_action(speaker, action)[len(speaker) :]}"


@st.composite
def noisy_scripts(draw: st.DrawFn) -> tuple[list[str], list[Action], str, bool]:
    """Participants, the intended actions, the script, and whether it was corrupted."""
    stem = draw(st.sampled_from(sorted(MATERIAL)))
    names, context, real = MATERIAL[stem]
    pool = st.sampled_from(real) | extra_actions(names) if real else extra_actions(names)
    actions: list[Action] = draw(st.lists(pool, min_size=1, max_size=8))
    headerless = draw(st.booleans())
    first = draw(st.integers(0, 1))
    turns: list[list[str]] = []  # each turn's lines, joined with its own line ending later
    for number, (speaker, action) in enumerate(actions, start=first):
        line = render_action(speaker, action)
        if action.action_type != "speak" and draw(st.booleans()):
            line = colon_form(speaker, action, draw(st.sampled_from(["", ",", ".", " ;", ". "])))
        if headerless:
            prefix = draw(st.sampled_from(HEADERLESS))
        else:
            prefix = draw(st.sampled_from(BLOCK_HEADERS + INLINE_HEADERS)).format(n=number)
        blank = [""] * draw(st.integers(0, 2))
        turns.append((prefix + line).split("\n") + blank)
    corrupted = draw(st.booleans())
    if corrupted:
        corrupt(draw, turns, names, [action.action_type for _, action in actions])
    endings = [draw(st.sampled_from(ENDINGS)) for _ in turns]
    body = "".join(e.join(lines) + e for lines, e in zip(turns, endings, strict=True))
    preamble = "\n".join(context) + "\n" if draw(st.booleans()) and not headerless else ""
    text = draw(st.sampled_from(["", "\ufeff"])) + preamble + body
    if text.rstrip().endswith(","):  # the parser drops one final `,` (see render_script)
        text = text.rstrip() + ","
    return names, actions, text, corrupted


def corrupt(draw: st.DrawFn, turns: list[list[str]], names: list[str], kinds: list[str]) -> None:
    """Damage one turn the way people damage scripts (``kinds``: each turn's action type)."""
    at = draw(st.integers(0, len(turns) - 1))
    lines = turns[at]
    kind = draw(st.sampled_from(["quote", "name", "junk", "unclosed", "after"]))
    if kind == "quote":  # lose the closing quote of a speech
        last = max(i for i, line in enumerate(lines) if line.strip() or i == 0)
        lost = lines[last].rstrip()[:-1]
        # Speech ending in a quote of its own would still close: that is other speech. A
        # turn with one quote mark only (an action ending in `"`) has no speech to open.
        opened = "\n".join(lines).count('"') >= 2
        if (
            opened
            and lines[last].rstrip().endswith('"')
            and not lost.rstrip().endswith(('"', '",'))
        ):
            lines[last] = lost
    elif kind == "name":  # misspell whoever acts in this turn: the first name on its line
        line = next(i for i, text in enumerate(lines) if any(n in text for n in names))
        at_name = min((lines[line].find(n), n) for n in names if n in lines[line])
        position, name = at_name
        end = position + len(name)
        lines[line] = lines[line][:end] + "x" + lines[line][end:]
    elif kind == "junk":  # between turns: inside quoted speech a line is just speech
        lines.insert(draw(st.sampled_from([0, len(lines)])), draw(st.sampled_from(JUNK)))
    elif kind == "unclosed":
        lines.append(f'{draw(st.sampled_from(names))} said: "and then')
    elif kinds[at] == "speak" and lines[0].endswith('"') and not any(lines[1:]):
        # Text after one-line speech. After an action whose argument ends in a quote mark
        # it would be more of the argument: another action, not a damaged one.
        lines[0] += " and smiled"


def read_back(actions: list[Action]) -> list[Action]:
    # Sotopia writes no argument for doing nothing or leaving.
    return [
        (s, a.model_copy(update={"argument": ""}) if a.action_type in ("none", "leave") else a)
        for s, a in actions
    ]


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(noisy_scripts())
def test_noisy_real_shaped_scripts_parse_as_meant_or_fail_at_a_line(
    script: tuple[list[str], list[Action], str, bool],
) -> None:
    names, actions, text, corrupted = script
    try:
        parsed = parse_script(text, names)
    except ScriptParseError as error:
        assert corrupted, f"a harmless script was refused: {error}"
        line_count = len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
        assert error.line_number is not None and 1 <= error.line_number <= line_count
        return
    assert [(a.speaker, a.action) for a in parsed] == read_back(actions)
