"""The round-trip law: render actions with the project's renderer, parse, get them back."""

import re

from hypothesis import assume, given
from hypothesis import strategies as st

from sotopia_are.messages import AgentAction, ScriptInteraction, parse_script, render_script

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


SPEECH_CHARS = st.sampled_from("abc XYZ,.!?:\"'[]-é—\n")
ARG_CHARS = st.sampled_from("abc XYZ.!?:\"'[]-é—")


def safe_speech(text: str, names: list[str]) -> bool:
    # A line inside the speech that starts like a turn header or an action would make
    # the rendered script ambiguous for any reader, so the law excludes it.
    for line in text.split("\n")[1:]:
        stripped = line.lstrip().lstrip(">").lstrip()
        if re.match(r"turn\s*#?\s*\d", stripped, re.I) or any(
            stripped.startswith(n) for n in names
        ):
            return False
    return True


@st.composite
def scripts(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, AgentAction]]]:
    names = draw(participants())
    actions = []
    for _ in range(draw(st.integers(1, 8))):
        speaker = draw(st.sampled_from(names))
        kind = draw(
            st.sampled_from(["speak", "none", "leave", "action", "non-verbal communication"])
        )
        if kind == "speak":
            argument = draw(st.text(SPEECH_CHARS, max_size=40))
            assume(safe_speech(argument, names))
        elif kind in ("none", "leave"):
            argument = ""
        else:
            argument = draw(st.text(ARG_CHARS, max_size=30)).strip().rstrip(",")
        others = [n for n in names if n != speaker]
        to = draw(st.none() | st.lists(st.sampled_from(others), min_size=1, unique=True))
        actions.append((speaker, AgentAction(action_type=kind, argument=argument, to=to)))  # type: ignore[arg-type]
    return names, actions


@given(scripts())
def test_render_then_parse_gives_the_actions_back(
    script: tuple[list[str], list[tuple[str, AgentAction]]],
) -> None:
    names, actions = script
    text = render_script(actions)
    parsed = parse_script(text, names)
    assert [(a.speaker, a.action) for a in parsed] == actions
    assert [a.turn for a in parsed] == list(range(1, len(actions) + 1))


@given(scripts())
def test_crlf_rendering_parses_the_same(
    script: tuple[list[str], list[tuple[str, AgentAction]]],
) -> None:
    names, actions = script
    assume(all("\r" not in a.argument for _, a in actions))
    parsed = parse_script(render_script(actions).replace("\n", "\r\n"), names)
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
