"""A call's `Generation` and an answer's `ParsedReply` are made without their frozen
dataclass `__init__` (`of_valid_dataclass`: their fields put into their `__dict__` at
once): each must be the value its constructor makes, and stay frozen."""

import dataclasses
import pickle

import pytest
from pydantic import BaseModel

from sotopia_are.llm.accounting import LLMCall
from sotopia_are.llm.session import Generation
from sotopia_are.llm.structured import ParsedReply, parse_reply
from sotopia_are.llm.valid_parts import of_valid_dataclass


class Answer(BaseModel):
    word: str


def test_a_generation_is_the_one_its_constructor_makes() -> None:
    call = LLMCall(model="m", template="t", messages=[], latency_s=0.5)
    made = of_valid_dataclass(Generation, {"value": Answer(word="x"), "call": call})
    built = Generation(Answer(word="x"), call)
    assert type(made) is Generation
    assert made == built and repr(made) == repr(built)
    assert list(vars(made).items()) == list(vars(built).items())
    assert dataclasses.astuple(made) == dataclasses.astuple(built)
    assert pickle.loads(pickle.dumps(made)) == built
    assert dataclasses.replace(made, value=Answer(word="y")).value == Answer(word="y")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.value = Answer(word="z")  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "notes"), [('{"word": "x"}', ()), ('```json\n{"word": "x"}\n```', ())]
)
def test_a_parsed_reply_is_the_one_its_constructor_makes(text: str, notes: tuple[str, ...]) -> None:
    made = parse_reply(text, Answer)
    built = ParsedReply(Answer(word="x"), notes)
    assert type(made) is ParsedReply
    assert made == built and repr(made) == repr(built)
    assert list(vars(made).items()) == list(vars(built).items())
    assert pickle.loads(pickle.dumps(made)) == built
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.normalizations = ("x",)  # type: ignore[misc]
