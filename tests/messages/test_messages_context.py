"""`parse_background`: a script's context preamble read back into a ScriptBackground."""

import json
import re
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from sotopia_are.messages import ScriptBackground, ScriptParseError, parse_background

DATA = Path(__file__).parent.parent / "data" / "transcripts"
EXPECTED: dict[str, dict[str, object]] = json.loads(
    (DATA / "expected.json").read_text(encoding="utf-8")
)
# The rlex_ files are bare `social_interactions`: no context at all.
WITH_PREAMBLE = sorted(stem for stem in EXPECTED if not stem.startswith("rlex_"))
BODY = '\n\nTurn #1\n{name} said: "Hello."\n'


def read(stem: str) -> str:
    return (DATA / f"{stem}.txt").read_text(encoding="utf-8")


def agents(stem: str) -> list[str]:
    names = EXPECTED[stem]["agents"]
    assert isinstance(names, list)
    return names


@pytest.mark.parametrize("stem", WITH_PREAMBLE)
def test_every_real_preamble_is_read(stem: str) -> None:
    background = parse_background(read(stem))
    assert background is not None
    assert background.agent_names == agents(stem)
    assert parse_background(read(stem), agents(stem)) == background
    assert background.scenario and all(background.agent_backgrounds)
    for name, text in zip(agents(stem), background.agent_backgrounds, strict=True):
        assert text.startswith(name) and "\n" not in text
    assert all(background.agent_goals)


@pytest.mark.parametrize("stem", sorted(set(EXPECTED) - set(WITH_PREAMBLE)))
def test_a_script_without_a_preamble_has_no_background(stem: str) -> None:
    assert parse_background(read(stem)) is None
    assert parse_background(read(stem), agents(stem)) is None


def test_the_rendered_layout_keeps_extra_information_and_hints() -> None:
    background = parse_background(read("he_01H84SW7PCD8ACM4K0S2BTEXYJ"))
    assert background is not None
    assert background.scenario.startswith("A conversation between two individuals, one is")
    assert background.p1_goal.startswith("Tell the cousin's partner that they are no longer")
    assert "(Extra information: they have been causing" in background.p1_goal
    assert "Hint: you may want to discuss" in background.p1_goal


def test_the_zero_based_layout_with_an_empty_first_line() -> None:
    background = parse_background(read("he_01H8FN411QTBBRRKBVSYFFGKVQ"))
    assert background is not None and background.agent_names == ["Micah Stevens", "Noah Davis"]
    # The first goal ends where its line ends, not at the inline `Turn #0: …` header.
    assert "Turn #0" not in background.p2_goal


def test_the_markdown_layout() -> None:
    background = parse_background(read("rl_01JTYE0ZQV23GJDCFCR1H6HYZY"))
    assert background is not None
    assert background.scenario == (
        "Two people are in the same room. One has brought some high-quality stationery "
        "items they don't want others to use without permission."
    )  # the **Codename:** line is not scenario
    assert background.agent_names == ["Eli Dawson", "Liam Johnson"]
    assert background.p2_background.startswith("Liam Johnson is a 60-year-old male retired")
    assert background.p1_goal.startswith("Prevent the other person from using your stuff (")
    assert "<strategy_hint>Hint:" in background.p1_goal
    assert "Social Interactions" not in background.p2_goal
    assert background.p2_goal.endswith("need some for the project.</extra_info>)")


def test_three_participants_and_multi_line_values() -> None:
    text = (
        "Scenario: A committee meeting.\nIt runs late.\n"
        "Participants: Ana, Bo and Cy\n"
        "Ana's background: Chairs it.\n"
        "Ana's goal: Finish on time.\n\nAnd keep the peace.\n"
        "Bo's goal: Be heard.\n"
        "Cy's goal: Leave early.\n"
        "\n"
        'Turn 1: Ana said: "Let\'s start."\n'
    )
    assert parse_background(text) == ScriptBackground(
        scenario="A committee meeting.\nIt runs late.",
        agent_names=["Ana", "Bo", "Cy"],
        agent_backgrounds=["Chairs it.", "", ""],  # a missing background is ""
        agent_goals=["Finish on time.\n\nAnd keep the peace.", "Be heard.", "Leave early."],
    )


def test_a_headerless_script_ends_its_preamble_at_the_first_action() -> None:
    text = (
        "Here is the context of this interaction:\nScenario: S\nParticipants: Al and Bea\n"
        "Al's goal: G1\nBea's goal: G2\n\nAl: Hi, Bea.\nBea said: \"Hello.\"\n"
    )
    background = parse_background(text)
    assert background is not None and background.agent_goals == ["G1", "G2"]


def test_names_that_the_participants_line_cannot_split_need_agent_names() -> None:
    names = ["Smith and Sons", "Jo"]
    text = ScriptBackground(
        scenario="A deal.", agent_names=names, agent_backgrounds=["", ""], agent_goals=["a", "b"]
    ).to_natural_language() + BODY.format(name="Jo")
    with pytest.raises(ScriptParseError):  # read as three names, without goals for two
        parse_background(text)
    background = parse_background(text, names)
    assert background is not None and background.agent_names == names


def test_given_names_must_match_the_preamble() -> None:
    text = read("he_01H7VM65KGGY7842XGE5A7PEK1")
    with pytest.raises(ScriptParseError) as raised:
        parse_background(text, ["Hendrick Heinz", "Sasha Ramirez"])
    assert raised.value.line_number == 4
    assert "Participants: Sasha Ramirez and Hendrick Heinz" in str(raised.value)
    markdown = read("rl_01JTYE0E5PGKE232AZ2VBQH7GA")
    with pytest.raises(ScriptParseError) as raised:
        parse_background(markdown, ["Mia Davis", "Ben Jackson"])
    assert raised.value.line_number == 15 and raised.value.line == "## Social Goals"


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("Participants: Al\nAl's goal: g\nTurn 1\nAl did nothing", 1, "two or more distinct"),
        ("Participants: Al and Al\nTurn 1\nAl did nothing", 1, "two or more distinct"),
        ("Participants: Al and Bo\nAl's goal: g\nTurn 1\nAl did nothing", 1, "no goal for Bo"),
        ("Participants: Al and Bo\nAl's goal: g\nBo's goal: h\nAl's goal: i\nTurn 1", 4, "second"),
        ("Participants: Al and Bo\nsee below\nAl's goal: g\nTurn 1", 2, "cannot read"),
    ],
)
def test_a_broken_preamble_names_its_line(text: str, line: int, reason: str) -> None:
    with pytest.raises(ScriptParseError, match=reason) as raised:
        parse_background(text)
    assert raised.value.line_number == line


def test_text_before_the_first_turn_that_is_not_a_context_is_none() -> None:
    assert parse_background('A note to the reader.\n\nTurn #1\nAl said: "Hi."') is None
    assert parse_background('Al said: "Hi."\nBo said: "Participants: Al and Bo"') is None


# -- the round-trip law --------------------------------------------------------------------

WORD = st.text(
    alphabet=st.characters(categories=["L", "M", "N"]) | st.sampled_from("'-"),
    min_size=1,
    max_size=8,
).filter(lambda word: word[0].isalpha() and word.lower() != "and")
NAME = st.lists(WORD, min_size=1, max_size=3).map(" ".join)
# Single-line values; any other text, including labels and turn headers in mid-line.
VALUE = (
    st.lists(
        st.text(alphabet=st.characters(exclude_characters="\r\n"), max_size=10)
        | st.sampled_from(["Turn #2", "Scenario: ", "'s goal: ", "said: ", '"', "Unknown"]),
        max_size=5,
    )
    .map("".join)
    .map(str.strip)
)


@st.composite
def backgrounds(draw: st.DrawFn) -> ScriptBackground:
    names = draw(st.lists(NAME, min_size=2, max_size=4, unique=True))
    # A name that reads as a turn header (`Turn 2 Lee`) would end the preamble.
    assume(not any(re.match(r"(?i)turn\s*#?\s*\d", name) for name in names))
    count = len(names)
    texts = st.lists(VALUE, min_size=count, max_size=count)
    # "Unknown" is how an empty background is shown: it reads back as "".
    known = draw(texts.filter(lambda values: _UNKNOWN not in values))
    return ScriptBackground(
        scenario=draw(VALUE),
        agent_names=names,
        agent_backgrounds=known if draw(st.booleans()) else [""] * count,
        agent_goals=draw(texts),
    )


_UNKNOWN = "Unknown"


@given(backgrounds())
def test_a_rendered_background_reads_back(background: ScriptBackground) -> None:
    text = background.to_natural_language() + BODY.format(name=background.agent_names[0])
    assert parse_background(text) == background
    assert parse_background(text, background.agent_names) == background
    assert parse_background("Prompt after formatting:\n" + text) == background
