"""The JSON text of a hash's ordered fields (verdicts, scores, the listed summary) is
``json.dumps``'s, byte for byte, whichever encoder wrote it: stored records keep reading
and comparing the same."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import to_jsonable_python

from sotopia_are.storage.fields import dumps_ordered

TINY_AND_HUGE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=1e-12, max_value=1e-3).map(lambda x: x * 1.0),
    st.floats(min_value=-1e-3, max_value=-1e-12),
    st.sampled_from([1e-05, 3e-07, 6.4e-05, 1e-4, 1e16, 1.5e300, 5e-324, -0.0, 0.1, 7.0]),
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TINY_AND_HUGE | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def by_json(value: Any) -> str:
    return json.dumps(to_jsonable_python(value), separators=(",", ":"), ensure_ascii=False)


@settings(max_examples=400)
@given(JSON)
def test_ordered_text_is_json_dumps_text(value: Any) -> None:
    assert dumps_ordered(value) == by_json(value)


def test_ordered_text_of_values_json_writes_otherwise() -> None:
    for value in [
        1e-05,
        [3e-07],
        {"b": 6.4e-05, "a": "0.00001 1e-7"},
        math.inf,
        (1, 2.5),
        "\ud800",
    ]:
        assert dumps_ordered(value) == by_json(value)
