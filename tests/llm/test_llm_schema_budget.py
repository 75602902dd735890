"""`response_format_within`: the schema sent when a request's ``max_tokens`` is below the
budget its output type's texts were bounded for. Every ``maxLength`` is cut so that the
texts at their longest and the rest of the answer fit what is sent; nothing else of the
schema changes, and the cached schema of the type is never touched."""

import copy
from typing import Any, ClassVar

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from schema_support import free_texts

from sotopia_are.agents.action_reply import action_output_type
from sotopia_are.agents.game_move_reply import move_output_type
from sotopia_are.agents.script_writing import script_output_type
from sotopia_are.evaluation import Rubric
from sotopia_are.llm import CHARS_PER_TOKEN, FORM_TOKENS, text_max_chars
from sotopia_are.llm.structured import response_format_for, response_format_within
from sotopia_are.social.protocol import MoveOption

BUDGET = 500


class Note(BaseModel):
    """Two bounded texts, and a property that happens to be called ``maxLength``."""

    answer_form_tokens: ClassVar[int] = 100

    title: str = Field(json_schema_extra={"maxLength": text_max_chars(100)})
    body: str = Field(json_schema_extra={"maxLength": text_max_chars(300)})
    maxLength: int = 3  # a field's name, not a bound


class Plain(BaseModel):
    """A bounded text, no form tokens stated: the whole budget is the text's."""

    text: str = Field(json_schema_extra={"maxLength": text_max_chars(BUDGET)})


def bounds(schema: Any) -> list[int]:
    return [text["maxLength"] for text in free_texts(schema)]


def schema_of(response_format: dict[str, Any] | None) -> dict[str, Any]:
    assert response_format is not None
    schema: dict[str, Any] = response_format["json_schema"]["schema"]
    return schema


def test_the_output_types_of_bounded_calls_state_their_form_where_the_cut_reads_it() -> None:
    """An action, a game move, a script and a judge's answer say how many tokens they take
    beside their texts under :data:`FORM_TOKENS`, as their budgets were fitted to."""
    speak = MoveOption(name="say", kind="speak")
    assert getattr(action_output_type("A", ("A", "B"), ("speak",)), FORM_TOKENS) == 60
    assert getattr(move_output_type((speak,), ("A", "B")), FORM_TOKENS) == 60
    assert getattr(script_output_type(("A", "B"), 4), FORM_TOKENS) == 20
    judged = Rubric.load("sotopia_eval").output_model(["A", "B"])
    assert getattr(judged, FORM_TOKENS) == 200 + 40 * 2 * 7


@given(sent=st.integers(min_value=1, max_value=3 * BUDGET))
def test_the_texts_at_their_longest_and_the_rest_fit_what_is_sent(sent: int) -> None:
    whole = response_format_for("json_schema", Note)
    kept = copy.deepcopy(whole)
    cut = response_format_within("json_schema", Note, sent, BUDGET)
    assert whole == kept  # the type's cached schema is untouched
    if sent >= BUDGET:
        assert cut is whole
        return
    title, body = bounds(schema_of(cut))
    assert 1 <= title <= text_max_chars(100) and 1 <= body <= text_max_chars(300)
    if sent > Note.answer_form_tokens + 2:
        assert (title + body) / CHARS_PER_TOKEN + Note.answer_form_tokens <= sent
        # All that is left, less a character a text.
        assert (title + body + 2) / CHARS_PER_TOKEN + Note.answer_form_tokens >= sent
    # Only the bounds change: the field named maxLength is a property still.
    assert schema_of(cut)["properties"]["maxLength"] == schema_of(whole)["properties"]["maxLength"]
    assert {k: v for k, v in cut.items() if k != "json_schema"} == {  # type: ignore[union-attr]
        k: v for k, v in whole.items() if k != "json_schema"
    }


def test_the_same_object_is_sent_for_every_request_of_a_budget() -> None:
    first = response_format_within("json_schema", Note, 250, BUDGET)
    assert response_format_within("json_schema", Note, 250, BUDGET) is first
    assert response_format_within("json_schema", Note, 251, BUDGET) is not first


def test_a_type_stating_no_form_tokens_gives_its_texts_the_whole_share() -> None:
    [bound] = bounds(schema_of(response_format_within("json_schema", Plain, BUDGET // 5, BUDGET)))
    assert bound == text_max_chars(BUDGET) // 5


def test_other_modes_send_what_they_sent() -> None:
    for mode in ("json_object", "prompt"):
        within = response_format_within(mode, Note, 10, BUDGET)
        assert within is response_format_for(mode, Note)
