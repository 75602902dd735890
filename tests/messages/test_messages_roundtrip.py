"""The round-trip law: render actions with the project's renderer, parse, get them back."""

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import ValidationError

from sotopia_are.messages import (
    AgentAction,
    ScriptInteraction,
    parse_script,
    parse_script_notes,
    render_action,
    render_script,
)

WORD = st.text(
    alphabet=st.sampled_from("abcdefgzABCDEFZéüøßłçÅÖ'-ñ李"), min_size=1, max_size=6
).filter(lambda w: w[0] not in "-'")
NAME = st.lists(WORD, min_size=1, max_size=3).map(" ".join)
KEYWORDS = {"said", "did", "left", "turn"}


@st.composite
def participants(draw: st.DrawFn) -> list[str]:
    names = draw(st.lists(NAME, min_size=2, max_size=5, unique=True))
    if draw(st.booleans()):  # a name that is a prefix of another
        names.append(f"{names[0]} {draw(WORD)}")
    names = list(dict.fromkeys(names))
    assume(len(names) >= 2)
    assume(not any(w.lower() in KEYWORDS for n in names for w in n.split()))
    return names


# Every kind of argument may hold line breaks, surrounding spaces, quotes (straight and
# typographic), brackets, colons and commas; lines may look like headers or actions.
CHARS = st.sampled_from("abc XYZ,.!?:\"'[]-é—“”\n\r\t")
TRICKY_LINES = st.sampled_from(
    ["Turn #3", "turn 2:", "Turn #4: x", "> ", "did nothing", "left the conversation", '"', '",']
)
KINDS = ["speak", "none", "leave", "action", "non-verbal communication"]


@st.composite
def arguments(draw: st.DrawFn, names: list[str]) -> str:
    pieces = draw(
        st.lists(
            st.text(CHARS, max_size=12)
            | TRICKY_LINES.map(lambda line: f"\n{line}\n")
            | st.sampled_from(names).map(lambda name: f'"\n{name} said: "')
            | st.sampled_from(names).map(lambda name: f"\n{name}: "),
            max_size=5,
        )
    )
    return "".join(pieces)


@st.composite
def scripts(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, dict[str, object]]]]:
    """Participants and `(speaker, AgentAction data)` pairs, arguments unconstrained."""
    names = draw(participants())
    actions: list[tuple[str, dict[str, object]]] = []
    for _ in range(draw(st.integers(1, 6))):
        speaker = draw(st.sampled_from(names))
        others = [n for n in names if n != speaker]
        to = draw(st.none() | st.lists(st.sampled_from(others), min_size=1, unique=True))
        data = {"action_type": draw(st.sampled_from(KINDS)), "argument": draw(arguments(names))}
        actions.append((speaker, data | {"to": to}))
    return names, actions


def build(data: list[tuple[str, dict[str, object]]]) -> list[tuple[str, AgentAction]] | None:
    """The actions, or None when one is refused (a multi-line description)."""
    try:
        return [(speaker, AgentAction.model_validate(item)) for speaker, item in data]
    except ValidationError as error:
        assert "must be a single line" in str(error)
        return None


def as_script_keeps(action: AgentAction) -> AgentAction:
    # The argument of `none` and `leave` is not part of the script (Sotopia renders
    # neither), so it reads back as "".
    if action.action_type in ("none", "leave"):
        return action.model_copy(update={"argument": ""})
    return action


@given(scripts())
def test_render_then_parse_gives_the_actions_back_or_render_refuses(
    script: tuple[list[str], list[tuple[str, dict[str, object]]]],
) -> None:
    names, data = script
    actions = build(data)
    if actions is None:
        return
    try:
        text = render_script(actions)
    except ValueError as error:
        assert "cannot render" in str(error)
        assert any(s == "speak" for s in (a.action_type for _, a in actions))
        return
    parsed = parse_script(text, names)
    assert [(a.speaker, a.action) for a in parsed] == [(s, as_script_keeps(a)) for s, a in actions]
    assert [a.turn for a in parsed] == list(range(1, len(actions) + 1))
    # The canonical script has nothing to skip and no cue to read: no notes.
    assert parse_script_notes(text, names).notes == []
    crlf = parse_script(text.replace("\n", "\r\n"), names)
    assert [(a.speaker, a.action) for a in crlf] == [(a.speaker, a.action) for a in parsed]


# The last line of multi-line speech, closing quote included, that could read as an
# explicit action of its own for some participant names.
EXPLICIT = re.compile(
    r'said\s*:|\[\s*(action|non-verbal communication|private\s+to)|:\s*["“]', re.I
)


def plain_speech(speech: str) -> bool:
    """Speech that render must accept: no line ends in a quote, no later line starts like
    a turn header, and a last line after a line break does not look like an explicit action."""
    lines = speech.split("\n")
    return (
        all(not line.rstrip().endswith(('"', '",')) for line in lines)
        and not any(re.match(r"\s*>?\s*turn\s*#?\s*\d+", line, re.I) for line in lines[1:])
        and not (len(lines) > 1 and EXPLICIT.search(lines[-1] + '"'))
    )


# How people write a turn header, alone on its line or followed by the action ({n} is the
# turn number), and the line endings a turn may use; a script mixes them freely.
HEADERS = [
    "Turn #{n}\n",
    "Turn {n}:\n",
    "Turn #{n}:\n",
    "Turn {n}\n",
    "turn {n}.\n\n",
    "Turn #{n}: ",
    "Turn {n}: ",
    "turn {n} ",
    "> Turn #{n} - ",
]
ENDINGS = ["\n", "\r\n", "\r"]


@st.composite
def mixed_scripts(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, AgentAction]], str]:
    """Participants, actions and a script of them whose turns each pick a header style and
    a line ending (actions that render refuses are left out)."""
    names, data = draw(scripts())
    actions = build(data) or []
    turns = []
    kept: list[tuple[str, AgentAction]] = []
    for speaker, action in actions:
        try:
            line = render_action(speaker, action)
        except ValueError:
            continue
        header = draw(st.sampled_from(HEADERS)).format(n=len(kept) + 1)
        blank = "\n" * draw(st.integers(0, 2))
        turn = f"{header}{line}\n{blank}".replace("\n", draw(st.sampled_from(ENDINGS)))
        turns.append(turn)
        kept.append((speaker, action))
    text = "".join(turns)
    if text.rstrip().endswith(","):  # the parser drops one final `,` (see render_script)
        text = text.rstrip() + ","
    return names, kept, text


@given(mixed_scripts())
def test_mixed_header_styles_and_line_endings_parse_back(
    script: tuple[list[str], list[tuple[str, AgentAction]], str],
) -> None:
    names, actions, text = script
    assume(actions)
    parsed = parse_script(text, names)
    assert [(a.speaker, a.action) for a in parsed] == [(s, as_script_keeps(a)) for s, a in actions]
    assert [a.turn for a in parsed] == list(range(1, len(actions) + 1))


@given(scripts())
def test_render_refuses_only_speech_with_a_closing_line_or_a_bare_header(
    script: tuple[list[str], list[tuple[str, dict[str, object]]]],
) -> None:
    # Render must not refuse ordinary speech: one line, or lines without `"` at their ends.
    _, data = script
    actions = build(data)
    assume(actions is not None)
    assert actions is not None
    plain = [(s, a) for s, a in actions if a.action_type != "speak" or plain_speech(a.argument)]
    render_script(plain)


def test_leading_and_trailing_spaces_and_commas_survive() -> None:
    names = ["Alice", "Bob"]
    actions = [
        ("Alice", AgentAction(action_type="speak", argument="  two spaces first, two after  ")),
        ("Bob", AgentAction(action_type="speak", argument="\nstarts and ends with a break\n")),
        ("Alice", AgentAction(action_type="action", argument="waves,")),
    ]
    text = render_script(actions)
    assert text.endswith("Alice [action] waves,,\n")  # the parser drops one final comma
    assert [(a.speaker, a.action) for a in parse_script(text, names)] == actions


def test_description_surrounding_space_is_dropped_and_line_breaks_refused() -> None:
    action = AgentAction(action_type="action", argument="  nods\r\n")
    assert action.argument == "nods"
    speech = AgentAction(action_type="speak", argument=" a\r\nb\rc ")
    assert speech.argument == " a\nb\nc "
    with pytest.raises(ValidationError, match="must be a single line"):
        AgentAction(action_type="non-verbal communication", argument="smiles\nand waves")


@pytest.mark.parametrize(
    ("speech", "fragment"),
    [
        ('x"\nBob said: "y', "'Bob said: \"y' would read as a new action"),
        ('x",\n\n> Bob: y', "'> Bob: y' would read as a new action"),
        ('"\nBob did nothing\nlater', "'Bob did nothing' would read as a new action"),
        ("first\nTurn #2\nsecond", "'Turn #2' would start a new turn"),
        ('first\nTurn #3: Bob said: "hi"\nlast', "'Turn #3: Bob said: \"hi\"' would start a new"),
        ("first\nBob [action] waves", "last line 'Bob [action] waves' would read as an action"),
        ("first\nBob: \u201chi", "last line 'Bob: \u201chi' would read as an action"),
    ],
)
def test_render_refuses_speech_that_would_read_back_differently(speech: str, fragment: str) -> None:
    action = AgentAction(action_type="speak", argument=speech)
    with pytest.raises(ValueError, match="cannot render Alice's speech") as caught:
        render_script([("Alice", action)])
    assert fragment in str(caught.value)
    with pytest.raises(ValueError, match="cannot render"):
        render_action("Alice", action)


def test_speech_with_quotes_inside_lines_still_renders() -> None:
    names = ["Alice", "Bob"]
    speech = 'She said "no"\nand left.\nTurn #3: see above\nBob was there'
    actions = [("Alice", AgentAction(action_type="speak", argument=speech))]
    parsed = parse_script(render_script(actions), names)
    assert [(a.speaker, a.action) for a in parsed] == actions


def test_script_interaction_from_actions() -> None:
    actions = [
        ("Alice", AgentAction(action_type="speak", argument='Say "hi"\nto Bob')),
        ("Bob", AgentAction(action_type="action", argument="waves", to=["Alice"])),
    ]
    script = ScriptInteraction.from_actions(actions)
    assert script.interactions == (
        'Turn #1\nAlice said: "Say "hi"\nto Bob"\n'
        "Turn #2\nBob [private to ['Alice']] [action] waves\n"
    )
    assert script.parse(["Alice", "Bob"], "bg")[1] == actions
