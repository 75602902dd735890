"""A judge's ratings are made of its validated answers as their ``model_dump()`` has them:
read from the rubric's own answer model's fields (a built-in or file rubric) or from the
dump (a rubric whose ``output_model`` is its own), they are the same, value for value and
type for type."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from sotopia_are.evaluation import GOAL_ONLY, SOTOPIA_EVAL, LLMJudge, Rubric

NAMES = ["Mara Quinn", "Teo Alvarez", "agent_1"]


class DumpedRubric(Rubric):
    """A rubric with an answer model of its own (here the same one): its answers are
    read from their ``model_dump()``."""

    def output_model(self, agent_names: Sequence[str]) -> type[BaseModel]:
        return super().output_model(agent_names)


def shape(value: Any) -> Any:
    """``value`` with every type and every dict's key order made part of it."""
    if isinstance(value, dict):
        return [(k, shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [shape(v) for v in value]
    return (type(value), repr(value))


@st.composite
def answers(draw: st.DrawFn) -> tuple[Rubric, list[str], list[BaseModel]]:
    """A rubric, participants, and one to three of its answers, validated from JSON."""
    rubric = draw(st.sampled_from([SOTOPIA_EVAL, GOAL_ONLY]))
    names = NAMES[: draw(st.integers(1, 3))]
    model = rubric.output_model(names)
    samples = []
    for _ in range(draw(st.integers(1, 3))):
        reply = {
            name: {
                d.name: {
                    "reasoning": draw(st.text(max_size=8)),
                    "score": draw(st.integers(d.low, d.high)),
                }
                for d in rubric.dimensions
            }
            for name in names
        }
        samples.append(model.model_validate(reply))
    return rubric, names, samples


@settings(max_examples=60, deadline=None)
@given(drawn=answers())
def test_ratings_read_from_the_answer_s_fields_are_those_of_its_dump(
    drawn: tuple[Rubric, list[str], list[BaseModel]],
) -> None:
    rubric, names, samples = drawn
    dumped_rubric = DumpedRubric(**dict(rubric))
    read = LLMJudge("openai/judge", rubric=rubric)._ratings(names, samples)
    dumped = LLMJudge("openai/judge", rubric=dumped_rubric)._ratings(names, samples)
    assert [shape(r.model_dump()) for r in read] == [shape(r.model_dump()) for r in dumped]
    # The scores are each answer's own, in sample order, for each participant.
    for index, rating in enumerate(read, start=1):
        for name, dimension in rating.dimensions.items():
            assert dimension.scores == [
                s.model_dump()[f"agent_{index}"][name]["score"] for s in samples
            ]
