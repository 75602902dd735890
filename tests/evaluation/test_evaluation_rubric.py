"""Rubrics: the built-in ones, rubric files, and the range-checked output model."""

import json
from pathlib import Path

import pytest
from _evaluation_support import DATA
from pydantic import ValidationError

from sotopia_are.evaluation import (
    GOAL_ONLY,
    SOTOPIA_EVAL,
    Dimension,
    Rubric,
    RubricError,
    builtin_rubrics,
)

NAMES = ["Mara Quinn", "Teo Alvarez"]


def test_sotopia_eval_has_the_seven_dimensions_and_their_ranges() -> None:
    assert [(d.name, d.low, d.high) for d in SOTOPIA_EVAL.dimensions] == [
        ("believability", 0, 10),
        ("relationship", -5, 5),
        ("knowledge", 0, 10),
        ("secret", -10, 0),
        ("social_rules", -10, 0),
        ("financial_and_material_benefits", -5, 5),
        ("goal", 0, 10),
    ]
    assert all(d.description for d in SOTOPIA_EVAL.dimensions)


def test_goal_only_is_built_in() -> None:
    assert [(d.name, d.low, d.high) for d in GOAL_ONLY.dimensions] == [("goal", 0, 10)]
    assert builtin_rubrics() == ["goal_only", "sotopia_eval"]
    assert Rubric.load("goal_only") == GOAL_ONLY


def test_a_custom_rubric_from_a_file_and_in_code_are_the_same() -> None:
    in_code = Rubric(
        name="negotiation",
        description="How well each side negotiated.",
        dimensions=(
            Dimension(
                name="deal_value",
                low=-3,
                high=3,
                description=(
                    "How good the final deal is for the participant, against their goal. "
                    "-3: a bad deal; 0: no deal; 3: an excellent deal."
                ),
            ),
            Dimension(
                name="courtesy",
                low=1,
                high=5,
                description="How courteous the participant stayed while bargaining. "
                "1: rude; 5: warm throughout.",
            ),
        ),
    )
    assert Rubric.from_file(DATA / "custom_rubric.json") == in_code
    assert Rubric.load(DATA / "custom_rubric.json") == in_code
    assert Rubric.load(str(DATA / "custom_rubric.json")) == in_code


def test_a_broken_rubric_file_names_every_problem() -> None:
    with pytest.raises(RubricError) as caught:
        Rubric.from_file(DATA / "broken_rubric.json")
    message = str(caught.value)
    assert "broken_rubric.json" in message
    assert "'Deal Value' must be a lower-case identifier" in message
    assert "low (5) must be below high (1)" in message


def test_unreadable_rubric_files(tmp_path: Path) -> None:
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"name": "x",\n "dimensions": [}')
    with pytest.raises(RubricError, match=r"bad.json: invalid JSON at line 2"):
        Rubric.from_file(bad_json)
    with pytest.raises(RubricError, match="cannot read rubric file"):
        Rubric.from_file(tmp_path / "missing.json")
    with pytest.raises(RubricError, match=r"built-in rubrics \['goal_only', 'sotopia_eval'\]"):
        Rubric.load("no_such_rubric")


def test_dimension_names_must_be_distinct() -> None:
    goal = GOAL_ONLY.dimensions[0]
    with pytest.raises(ValidationError, match=r"repeated: \['goal'\]"):
        Rubric(name="twice", dimensions=(goal, goal))
    with pytest.raises(ValidationError):
        Rubric(name="empty", dimensions=())


def _answer(score: int, *, drop: str | None = None) -> dict[str, object]:
    ratings = {
        d.name: {"reasoning": "because", "score": score if d.name == "goal" else d.low}
        for d in SOTOPIA_EVAL.dimensions
        if d.name != drop
    }
    return {name: ratings for name in NAMES}


def test_the_output_model_is_keyed_by_participant_and_checks_ranges() -> None:
    model = SOTOPIA_EVAL.output_model(NAMES)
    schema = model.model_json_schema()
    assert schema["required"] == NAMES
    valid = model.model_validate(_answer(10)).model_dump()
    assert valid["agent_2"]["goal"] == {"reasoning": "because", "score": 10}
    with pytest.raises(ValidationError) as too_high:
        model.model_validate(_answer(11))
    assert {e["loc"] for e in too_high.value.errors()} == {
        ("Mara Quinn", "goal", "score"),
        ("Teo Alvarez", "goal", "score"),
    }
    with pytest.raises(ValidationError) as missing:
        model.model_validate(_answer(5, drop="secret"))
    assert {e["type"] for e in missing.value.errors()} == {"missing"}
    with pytest.raises(ValidationError):  # a reason alone is no score
        model.model_validate(json.loads(json.dumps(_answer(5)).replace('"score": 5', '"x": 5')))
