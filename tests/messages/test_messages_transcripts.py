"""Every real SOTOPIA transcript in tests/data/transcripts parses (see ATTRIBUTION.md there)."""

import json
from pathlib import Path

import pytest

from sotopia_are.messages import parse_script

DATA = Path(__file__).parent.parent / "data" / "transcripts"
EXPECTED: dict[str, dict[str, object]] = json.loads(
    (DATA / "expected.json").read_text(encoding="utf-8")
)


def read(stem: str) -> str:
    return (DATA / f"{stem}.txt").read_text(encoding="utf-8")


def test_every_transcript_is_listed() -> None:
    on_disk = {path.stem for path in DATA.glob("*.txt")}
    assert on_disk == set(EXPECTED)
    assert {stem.split("_")[0] for stem in on_disk} == {"he", "rl", "rlex"}


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_transcript_parses(stem: str) -> None:
    agents = EXPECTED[stem]["agents"]
    assert isinstance(agents, list)
    actions = parse_script(read(stem), agents)
    assert len(actions) == EXPECTED[stem]["actions"]
    assert {a.speaker for a in actions} == set(agents)


def test_plain_layout_with_dangling_header() -> None:
    actions = parse_script(
        read("he_01H7VM65KGGY7842XGE5A7PEK1"), ["Sasha Ramirez", "Hendrick Heinz"]
    )
    assert [a.turn for a in actions] == list(range(1, 8))
    assert [a.speaker for a in actions[:2]] == ["Sasha Ramirez", "Hendrick Heinz"]
    assert actions[-1].action.argument.endswith("enjoy this vacation together.")


def test_inline_zero_based_layout_with_empty_last_header() -> None:
    actions = parse_script(read("he_01H8FN411QTBBRRKBVSYFFGKVQ"), ["Micah Stevens", "Noah Davis"])
    assert [a.turn for a in actions] == list(range(7))
    assert actions[0].action.argument == "Hey Noah, can we have a quick chat?"


def test_speech_that_embeds_a_transcript() -> None:
    actions = parse_script(
        read("he_01HNBCQQRFA7332019G6ABD7Y6"), ["Sophia James", "Baxter Sterling"]
    )
    assert [(a.turn, a.speaker, a.action.action_type) for a in actions] == [
        (1, "Sophia James", "speak"),
        (2, "Baxter Sterling", "speak"),
        (3, "Sophia James", "speak"),
        (4, "Baxter Sterling", "speak"),
        (5, "Sophia James", "non-verbal communication"),
        (6, "Baxter Sterling", "speak"),
        (7, "Sophia James", "leave"),
    ]
    embedded = actions[3].action.argument
    assert embedded.startswith("Strangely, you have exited the conversation.")
    assert "\nTurn #3: none\n" in embedded
    assert embedded.endswith('Turn #6: leave"')


def test_speech_that_quotes_turn_lines_and_nested_quotes() -> None:
    actions = parse_script(
        read("he_01HP5KH3R3NWD8BZE9BN0GRPJY"), ["Benjamin Jackson", "Ethan Smith"]
    )
    assert [a.turn for a in actions] == [1, 2, 3, 4, 5, 6, 7, 8, 10]
    assert actions[3].action.argument.startswith("Turn #4: Ethan Smith said: 'Oh Benjamin")
    assert actions[5].action.argument.startswith('Turn #5: Ethan Smith said: "Yeah')
    assert actions[-1].action.action_type == "leave"


def test_markdown_and_colon_forms() -> None:
    md = parse_script(read("rl_01JTYE0E5PGKE232AZ2VBQH7GA"), ["Mia Davis", "Benjamin Jackson"])
    assert [a.speaker for a in md] == ["Mia Davis", "Benjamin Jackson"] * 2 + ["Mia Davis"]
    assert md[-1].action.action_type == "leave"
    colon = parse_script(
        read("rlex_01H8FJCGCSNE1Q64ZZFXAC23VS"), ["Finnegan O'Malley", "Noah Davis"]
    )
    assert colon[1].action.action_type == "non-verbal communication"
    assert colon[1].action.argument == "Shaking my head and raising my hand in a stopping motion"
    assert colon[-1].speaker == "Finnegan O'Malley"
    assert colon[-1].action.action_type == "leave"


def test_multi_line_speech_with_blank_line() -> None:
    actions = parse_script(read("he_01HP5MJA69CN9WA09GKE2D4K20"), ["Eli Dawson", "William Brown"])
    assert "\n\nHow about we strike a middle ground?" in actions[5].action.argument
