"""The messages' per-turn shortcuts say what the general forms they replace say."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.messages import AgentAction, ScriptBackground, render_script
from sotopia_are.messages.background import _CONTROL
from sotopia_are.messages.parser import parse_script, unreadable_speech


def test_the_control_characters_are_unicodes_category_cc() -> None:
    searched = {c for c in map(chr, range(sys.maxunicode + 1)) if _CONTROL.search(c)}
    listed = {c for c in map(chr, range(sys.maxunicode + 1)) if unicodedata.category(c) == "Cc"}
    assert searched == listed


@given(st.text(max_size=8), st.sampled_from(["\x00", "\x1b", "\x7f", "\x85", "\x9f"]))
def test_a_name_with_a_control_character_is_refused(name: str, control: str) -> None:
    with pytest.raises(ValueError, match="control character"):
        ScriptBackground(
            scenario="s",
            agent_names=[f"A{name}{control}", "Bo"],
            agent_backgrounds=["", ""],
            agent_goals=["", ""],
        )


@given(st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=40))
def test_one_line_of_speech_always_reads_back(speech: str) -> None:
    """Law: speech without a line break is readable, and its script reads back as it."""
    assert unreadable_speech(speech) is None
    said = AgentAction(action_type="speak", argument=speech)
    [parsed] = parse_script(render_script([("Ann", said)]), ["Ann", "Bo"])
    assert (parsed.speaker, parsed.action) == ("Ann", said)
