"""Reading an answer's keys: the shortcut for keys written as the fields are says what
the general reading says."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.agents.action_reply import _KEYS
from sotopia_are.agents.game_move_reply import _KEYS as _MOVE_KEYS
from sotopia_are.agents.reply_keys import ReplyKeys

KEYS = st.sampled_from(
    ["action_type", "argument", "to", "Action_Type", "type", "recipients", "To", "extra", "move"]
)
VALUES: st.SearchStrategy[Any] = st.none() | st.text(max_size=5) | st.lists(st.text(max_size=3))


@given(
    st.sampled_from([_KEYS, _MOVE_KEYS]),
    st.dictionaries(KEYS, VALUES | st.dictionaries(KEYS, VALUES, max_size=3), max_size=4),
)
def test_reading_keys_is_the_general_reading(keys: ReplyKeys, data: dict[str, Any]) -> None:
    notes: list[str] = []
    general: list[str] = []
    read = keys.canonical(data, notes)
    assert read == keys._canonical_keys(keys._unwrapped(data, general), general)
    assert list(read) == list(keys._canonical_keys(keys._unwrapped(data, []), []))
    assert notes == general
    assert read is not data  # the caller's answer is never changed in place
