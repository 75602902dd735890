"""Judge answers as real models write them, and verdicts a study should not trust.

Form is normalised and accepted from the first answer (noted on the call); content is
sent back. A valid but suspicious verdict is kept and carries warnings.
"""

import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from _evaluation_support import judge_answer
from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.agents import ScriptedAgent
from sotopia_are.evaluation import (
    GOAL_ONLY,
    SOTOPIA_EVAL,
    Dimension,
    LLMJudge,
    Rubric,
    normalize_judge_reply,
)
from sotopia_are.llm import LLMSession
from sotopia_are.llm.structured import parse_reply, response_format_for
from sotopia_are.messages import AgentAction, ScriptBackground
from sotopia_are.record import give_verdict, record_of_result
from sotopia_are.social import EpisodeSpec, run_episode
from sotopia_are.testing import LocalLLMServer, random_instance

MODEL = "openai/test-model"
NAMES = ["Mara Quinn", "Teo Alvarez"]
TRANSCRIPT = 'Turn #1\nMara Quinn said: "Evening, Teo."'


def goal(reasoning: str, score: Any) -> dict[str, Any]:
    return {"reasoning": reasoning, "score": score}


@pytest.mark.parametrize(
    "answer",
    [
        {"Mara Quinn": {"goal": goal("r", "7")}, "Teo Alvarez": {"goal": goal("r", 4.0)}},
        {"mara quinn": {"Goal": goal("r", 7)}, "TEO": {"GOAL": goal("r", " 4 ")}},
        {"evaluation": {"Mara Quinn": {"goal": ["r", 7]}, "Teo Alvarez": {"goal": ["r", 4]}}},
        {
            "Mara Quinn": {"goal": {"explanation": "r", "score": 7}},
            "Teo Alvarez": {"goal": {"reason": "r", "score": "+4"}},
        },
        # What a real 0.5B judge wrote for the goal-only rubric (tests/data/real_model).
        {
            "Mara Quinn": {"reasoning": "r", "score": 7},
            "Teo Alvarez": {"reasoning": "r", "score": 4},
        },
    ],
)
async def test_judge_form_is_normalised_and_accepted_at_once(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    bakery: ScriptBackground,
    answer: dict[str, Any],
) -> None:
    llm_server.enqueue(json.dumps(answer))
    session = make_session()
    evaluation = await LLMJudge(MODEL, GOAL_ONLY, session=session).evaluate(bakery, TRANSCRIPT)
    assert evaluation.ok
    assert evaluation.rating("Mara Quinn").scores() == {"goal": 7.0}
    assert evaluation.rating("Teo Alvarez").scores() == {"goal": 4.0}
    [call] = evaluation.calls
    assert len(call.attempts) == 1 and call.normalized and call.attempts[0].normalized
    assert session.usage().normalized_calls == 1


def test_a_rating_without_its_dimension_is_read_only_for_a_one_dimension_rubric() -> None:
    answer = {name: {"reasoning": "r", "score": 3} for name in NAMES}
    normalized, _ = normalize_judge_reply(answer, NAMES, SOTOPIA_EVAL.dimension_names)
    assert normalized == answer  # with seven dimensions it is not ours to guess which


def test_a_dimension_written_with_spaces_is_the_rubric_s() -> None:
    answer = {name: {"Social Rules": goal("r", -1)} for name in NAMES}
    normalized, notes = normalize_judge_reply(answer, NAMES, SOTOPIA_EVAL.dimension_names)
    assert normalized == {name: {"social_rules": goal("r", -1)} for name in NAMES}
    assert len(notes) == 2


@pytest.mark.parametrize("score", [7.5, True, "high", "7/10", None])
def test_scores_that_are_not_whole_numbers_are_left_for_validation(score: Any) -> None:
    answer = {name: {"goal": goal("r", score)} for name in NAMES}
    normalized, notes = normalize_judge_reply(answer, NAMES, ["goal"])
    assert normalized == answer and notes == []
    with pytest.raises(ValueError):
        GOAL_ONLY.output_model(NAMES).model_validate(normalized)


RATINGS = st.dictionaries(
    st.sampled_from(SOTOPIA_EVAL.dimension_names),
    st.builds(goal, st.text(max_size=10), st.integers(-10, 10)),
    min_size=1,
)


@given(st.fixed_dictionaries({name: RATINGS for name in NAMES}))
def test_canonical_judge_answers_are_left_alone(answer: dict[str, Any]) -> None:
    assert normalize_judge_reply(answer, NAMES, SOTOPIA_EVAL.dimension_names) == (answer, [])


def spec() -> EpisodeSpec:
    return EpisodeSpec(
        episode_id="quiet",
        scenario="A bakery before closing.",
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy cheap bread"],
        max_turns=4,
    )


def scripted(mara: list[AgentAction], teo: list[AgentAction]) -> list[ScriptedAgent]:
    return [ScriptedAgent("Mara Quinn", mara), ScriptedAgent("Teo Alvarez", teo)]


NONE = AgentAction(action_type="none", argument="")
HELLO = AgentAction(action_type="speak", argument="Evening! Any bread left?")


DIMENSIONS = st.builds(
    lambda name, low, width: Dimension(name=name, low=low, high=low + width, description="d"),
    # Names a normaliser could mistake for the keys of a rating or for a participant.
    st.sampled_from(["goal", "score", "reasoning", "social_rules", "ann", "believability"]),
    st.integers(min_value=-20, max_value=10),
    st.integers(min_value=1, max_value=20),
)
RUBRICS = st.one_of(
    st.sampled_from([SOTOPIA_EVAL, GOAL_ONLY]),
    st.lists(DIMENSIONS, min_size=1, max_size=4, unique_by=lambda d: d.name).map(
        lambda dimensions: Rubric(name="drawn", dimensions=tuple(dimensions))
    ),
)


@given(
    RUBRICS,
    st.lists(
        st.sampled_from(["Ann", "ann", "Mara Quinn", "Teo Alvarez", "Teo", "goal", "evaluation"]),
        min_size=1,
        max_size=3,
        unique=True,
    ),
    st.integers(min_value=0, max_value=2**64),
)
def test_every_instance_of_the_sent_schema_is_accepted_as_it_was_written(
    rubric: Rubric, names: list[str], seed: int
) -> None:
    """What a server enforcing the judge's schema may answer (any instance of it) is
    accepted, with every score and reasoning as written."""
    output_type = rubric.output_model(names)
    response_format = response_format_for("json_schema", output_type)
    assert response_format is not None
    instance = random_instance(response_format["json_schema"]["schema"], random.Random(seed))
    answer = parse_reply(json.dumps(instance), output_type).value.model_dump(by_alias=True)
    assert answer == {
        name: {
            dimension: {"reasoning": rating["reasoning"], "score": int(rating["score"])}
            for dimension, rating in ratings.items()
        }
        for name, ratings in instance.items()
    }


async def test_a_high_goal_for_an_agent_that_never_acted_is_flagged(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    episode = await run_episode(spec(), scripted([NONE, NONE], [HELLO, HELLO]))
    llm_server.enqueue(
        json.dumps(
            {"Mara Quinn": {"goal": goal("sold it", 10)}, "Teo Alvarez": {"goal": goal("x", 3)}}
        )
    )
    verdict = await give_verdict(
        record_of_result(episode), LLMJudge(MODEL, GOAL_ONLY, session=make_session())
    )
    assert verdict.evaluation.warnings == [
        "Mara Quinn never spoke or acted, yet the judge gave goal 10 (range 0 to 10)"
    ]
    # The scores stay as the judge gave them; the warning travels with the response.
    assert verdict.response().rates["Mara Quinn"] == (10.0, {"goal": 10.0})
    assert "Judge warnings:" in (verdict.response().comments or "")


async def test_identical_ratings_for_every_participant_are_flagged(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    episode = await run_episode(spec(), scripted([HELLO, HELLO], [HELLO, HELLO]))
    # judge_answer's reasoning names each participant: same scores, different reasoning.
    llm_server.enqueue(judge_answer({name: {"goal": 5} for name in NAMES}))
    llm_server.enqueue(json.dumps({name: {"goal": goal("Both did well.", 5)} for name in NAMES}))
    verdict = await give_verdict(
        record_of_result(episode), LLMJudge(MODEL, GOAL_ONLY, session=make_session())
    )
    assert verdict.evaluation.warnings == []  # different reasoning: not a copy
    verdict = await give_verdict(
        record_of_result(episode), LLMJudge(MODEL, GOAL_ONLY, session=make_session())
    )
    assert verdict.evaluation.warnings == [
        "the judge gave every participant the same scores and the same reasoning on every dimension"
    ]


async def test_an_honest_verdict_has_no_warnings(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    episode = await run_episode(spec(), scripted([HELLO, NONE], [HELLO, NONE]))
    llm_server.enqueue(judge_answer({"Mara Quinn": {"goal": 9}, "Teo Alvarez": {"goal": 2}}))
    verdict = await give_verdict(
        record_of_result(episode), LLMJudge(MODEL, GOAL_ONLY, session=make_session())
    )
    assert verdict.evaluation.warnings == []
