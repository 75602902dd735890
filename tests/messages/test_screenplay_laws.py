"""Laws of the screenplay reader: a scene written in any mix of the screenplay forms
people use reads back as the actions it was written from, and a whispered line never
becomes public speech."""

from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.messages import AgentAction, parse_script, parse_script_notes

POOL = ["Dana Reyes", "Marcus Webb", "Lucia Moreno", "Ines Okafor", "Jo Ng", "Zoë d'Arc"]
WORDS = [
    "the",
    "coffee",
    "is",
    "cold",
    "again",
    "and",
    "you",
    "know",
    "it",
    "we",
    "should",
    "talk",
    "later",
    "maybe",
    "not",
]
NON_VERBAL = ["sighs", "nods", "shrugs", "smiles at the floor", "rolls her eyes"]
PHYSICAL = ["pours coffee", "opens the window", "picks up a chart", "sits down"]
SKIPPED = ["INT. HOSPITAL BREAK ROOM - NIGHT", "Scene 2", "CUT TO:", "The kettle clicks off."]
DELIVERY = ["(quietly)", "(without looking up)", "(beat)", "[sighing]"]
EXTENSIONS = ["", " (CONT'D)", " (O.S.)", " (V.O.)"]
WHISPERS = ["(whispering to {})", "[whispers to {}]", "(aside, to {})", "(whispers to {})"]

Action = tuple[str, AgentAction]


def spelling(draw: st.DrawFn, name: str) -> str:
    """How a script may write `name`: full or first name, as written, in capitals or not."""
    written = draw(st.sampled_from([name, name.split()[0]]))
    return draw(st.sampled_from([written, written.upper(), written.lower()]))


def label(draw: st.DrawFn, name: str) -> str:
    return spelling(draw, name) + draw(st.sampled_from(EXTENSIONS))


def capitalised(draw: st.DrawFn, name: str) -> str:
    """A name opening a stage direction, which must start with a capital."""
    written = draw(st.sampled_from([name, name.split()[0]]))
    return draw(st.sampled_from([written, written.upper()]))


@st.composite
def speech(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8))
    return " ".join(words).capitalize() + draw(st.sampled_from([".", "?", "!", ""]))


@st.composite
def scenes(draw: st.DrawFn) -> tuple[list[str], list[Action], str, int]:
    """Participants, the actions, a screenplay of them, and how many lines it skips."""
    names = draw(st.lists(st.sampled_from(POOL), min_size=2, max_size=4, unique=True))
    actions: list[Action] = []
    blocks: list[str] = []
    skipped = 0
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.integers(0, 4)) == 0:
            blocks.append(draw(st.sampled_from(SKIPPED)))
            skipped += 1
        speaker = draw(st.sampled_from(names))
        kind = draw(st.sampled_from(["speak", "speak", "whisper", "gesture", "do", "leave"]))
        said = draw(speech())
        if kind in ("speak", "whisper"):
            to = None
            cue = draw(st.sampled_from(["", *DELIVERY]))
            if kind == "whisper":
                listener = draw(st.sampled_from([n for n in names if n != speaker]))
                cue, to = (
                    draw(st.sampled_from(WHISPERS)).format(spelling(draw, listener)),
                    [listener],
                )
            if draw(st.booleans()):
                blocks.append(f"{label(draw, speaker)}: {cue} {said}")
            else:
                below = [cue, said] if cue and draw(st.booleans()) else [f"{cue} {said}"]
                # Speech below a label runs to a blank line, as in a screenplay.
                blocks.append("\n".join([label(draw, speaker), *below, ""]))
            actions.append((speaker, AgentAction(action_type="speak", argument=said, to=to)))
            continue
        if kind == "leave":
            verb, action = draw(st.sampled_from(["exits", "leaves", "leaves the room"])), "leave"
            argument = ""
        else:
            verb = draw(st.sampled_from(NON_VERBAL if kind == "gesture" else PHYSICAL))
            action = "non-verbal communication" if kind == "gesture" else "action"
            argument = verb
        written = f"{capitalised(draw, speaker)} {verb}."
        # Narration without parentheses acts only once the conversation has started.
        forms = [f"({written})", f"[{written[:-1]}]"] + ([written] if actions else [])
        blocks.append(draw(st.sampled_from(forms)))
        actions.append((speaker, AgentAction(action_type=action, argument=argument)))
    separator = draw(st.sampled_from(["\n", "\n\n"]))
    return names, actions, separator.join(blocks) + "\n", skipped


@given(scenes())
def test_a_screenplay_reads_back_as_the_actions_it_was_written_from(
    scene: tuple[list[str], list[Action], str, int],
) -> None:
    names, actions, text, skipped = scene
    parsed = parse_script_notes(text, names)
    assert [(a.speaker, a.action) for a in parsed.actions] == actions, text
    assert parsed.warnings == []
    assert len([n for n in parsed.notes if "skipped" in n.message]) == skipped


@st.composite
def whispered_scenes(draw: st.DrawFn) -> tuple[list[str], str, dict[str, str]]:
    """Participants, a scene, and each secret in it with the one it is whispered to."""
    names = draw(st.lists(st.sampled_from(POOL), min_size=3, max_size=5, unique=True))
    lines: list[str] = []
    secrets: dict[str, str] = {}
    for number in range(draw(st.integers(1, 6))):
        speaker, listener = draw(st.permutations(names))[:2]
        secret = f"secret{number}"
        cue = draw(st.sampled_from(WHISPERS)).format(spelling(draw, listener))
        public = draw(speech())
        name = label(draw, speaker)
        lines += draw(
            st.sampled_from(
                [
                    [f"{name}: {cue} {secret}"],
                    [f"{name}: {public} {cue} {secret}"],
                    [f"{spelling(draw, speaker)} {cue}: {secret}"],
                    [name, cue, secret, ""],
                    [name, f"{public} {cue} {secret}", ""],
                ]
            )
        )
        secrets[secret] = listener
        if draw(st.booleans()):
            lines.append(f"{label(draw, listener)}: {public}")
    return names, "\n".join(lines) + "\n", secrets


@given(whispered_scenes())
def test_a_whispered_line_never_becomes_public_speech(
    scene: tuple[list[str], str, dict[str, str]],
) -> None:
    names, text, secrets = scene
    actions = parse_script(text, names)
    for secret, listener in secrets.items():
        holding = [a.action for a in actions if secret in a.action.argument]
        assert holding, (secret, text)
        assert all(action.to == [listener] for action in holding), text
