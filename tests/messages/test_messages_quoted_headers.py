"""Quoted speech that runs over several lines reads to its closing quote even when one of
its lines looks like a turn header (`Turn #2` alone: a speaker reading out a script); a
quote that is really missing before the next turn's action is still an error."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.messages import ScriptParseError, parse_script

AB = ["Alice", "Bob"]


def script(speech: str) -> str:
    return f'Turn #1\nAlice said: "{speech}"\nTurn #2\nBob said: "ok"\n'


@pytest.mark.parametrize(
    "speech",
    [
        "Here is the scene I wrote:\nTurn #2\nand then the lights go out",
        "Read this:\nTurn #7",
        "Turn #3\nis where it all went wrong",
        "Two of them:\nTurn #2\nthe middle\nTurn #3\nthe end",
    ],
)
def test_speech_with_a_header_line_reads_to_its_closing_quote(speech: str) -> None:
    alice, bob = parse_script(script(speech), AB)
    assert (alice.speaker, alice.action.argument, alice.turn) == ("Alice", speech, 1)
    assert (bob.speaker, bob.action.argument, bob.turn) == ("Bob", "ok", 2)


@pytest.mark.parametrize(
    "text",
    [
        'Turn #1\nAlice said: "hello\nTurn #2\nBob said: "hi"\n',
        'Turn #1\nAlice said: "never closed\nTurn #2\nBob did nothing\n',
        'Turn #1\nAlice said: "quoting\nTurn #2\nand never closing\n',
    ],
)
def test_a_missing_quote_before_the_next_turn_is_still_an_error(text: str) -> None:
    with pytest.raises(ScriptParseError, match="never closed") as caught:
        parse_script(text, AB)
    assert caught.value.line_number == 2


PLAIN = st.text(alphabet="abcxyz ,.", min_size=1, max_size=12).filter(lambda t: t.strip())
HEADER = st.integers(1, 9).map(lambda n: f"Turn #{n}")


@given(st.lists(PLAIN | HEADER, min_size=1, max_size=6), PLAIN)
def test_any_plain_speech_with_header_lines_reads_back(lines: list[str], last: str) -> None:
    """Law: lines that are no step of their own, bare headers among them, ending in plain
    text, read back as the speech they are."""
    speech = "\n".join([*lines, last.strip()])
    alice, bob = parse_script(script(speech), AB)
    assert alice.action.argument == speech and bob.action.argument == "ok"
