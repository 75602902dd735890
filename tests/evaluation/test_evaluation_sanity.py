"""The judge's warnings follow their two rules, whatever the ratings and actions: a goal
above the middle of its range for a participant who never did anything but nothing or
leave, and every participant rated alike (the same dimensions in the same order, each
with the same scores and reasonings)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from sotopia_are.evaluation import Evaluation, judge_warnings
from sotopia_are.evaluation.result import AgentRating, DimensionScore
from sotopia_are.messages import AgentAction

AGENTS = ["Mara Quinn", "Teo Alvarez", "Ada Obi"]
DIMENSIONS = ["goal", "believability", "secret"]


def expected(evaluation: Evaluation, actions: Mapping[str, Sequence[AgentAction]]) -> list[str]:
    """The rules as the docstring states them, spelt out plainly."""
    warnings = []
    for rating in evaluation.ratings:
        goal = rating.dimensions.get("goal")
        if goal is None:
            continue
        did = [a for a in actions.get(rating.agent, ()) if a.action_type not in ("none", "leave")]
        if not did and goal.mean > (goal.low + goal.high) / 2:
            warnings.append(
                f"{rating.agent} never spoke or acted, yet the judge gave goal "
                f"{goal.mean:g} (range {goal.low} to {goal.high})"
            )
    shapes = [
        [(name, d.scores, d.reasonings) for name, d in rating.dimensions.items()]
        for rating in evaluation.ratings
    ]
    if len(shapes) > 1 and all(shape == shapes[0] for shape in shapes[1:]):
        warnings.append(
            "the judge gave every participant the same scores and the same reasoning on "
            "every dimension"
        )
    return warnings


@st.composite
def rated(draw: st.DrawFn) -> tuple[Evaluation, dict[str, list[AgentAction]]]:
    """Ratings of one to three participants, few enough values that equal ratings (and
    equal but for one dimension, its order or one reasoning) are drawn often; and each
    participant's actions."""
    count = draw(st.integers(1, 3))
    agents = AGENTS[:count]
    ratings = []
    for agent in agents:
        names = draw(st.permutations(DIMENSIONS).map(lambda p: p[: draw(st.integers(1, 3))]))
        samples = draw(st.integers(1, 2))
        dimensions = [
            DimensionScore.of(
                name,
                0,
                10,
                draw(st.lists(st.integers(0, 10), min_size=samples, max_size=samples)),
                draw(st.lists(st.sampled_from(["ok", "fine"]), min_size=samples, max_size=samples)),
            )
            for name in names
        ]
        ratings.append(AgentRating.of(agent, dimensions))
    if draw(st.booleans()) and len(ratings) > 1:  # the others a copy of the first's
        ratings = [ratings[0].model_copy(update={"agent": a}) for a in agents]
    evaluation = Evaluation(
        rubric="r", model="m", agent_names=agents, samples=1, valid_samples=1, ratings=ratings
    )
    kinds = st.sampled_from(["none", "leave", "speak", "action", "non-verbal communication"])
    actions = {
        agent: [
            AgentAction(action_type=kind, argument="x")
            for kind in draw(st.lists(kinds, max_size=3))
        ]
        for agent in agents
        if draw(st.booleans())
    }
    return evaluation, actions


@settings(max_examples=400, deadline=None)
@given(rated())
def test_warnings_follow_their_rules(case: tuple[Evaluation, dict[str, list[AgentAction]]]) -> None:
    evaluation, actions = case
    assert judge_warnings(evaluation, actions) == expected(evaluation, actions)


def test_ratings_alike_but_for_the_order_of_their_dimensions_are_not_identical() -> None:
    one = [DimensionScore.of(name, 0, 10, [5], ["ok"]) for name in DIMENSIONS]
    ratings = [AgentRating.of("a", one), AgentRating.of("b", one[::-1])]
    evaluation = Evaluation(
        rubric="r", model="m", agent_names=["a", "b"], samples=1, valid_samples=1, ratings=ratings
    )
    assert judge_warnings(evaluation, {"a": [], "b": []}) == []
    alike = [AgentRating.of("a", one), AgentRating.of("b", one)]
    assert judge_warnings(evaluation.model_copy(update={"ratings": alike}), {}) == [
        "the judge gave every participant the same scores and the same reasoning on every dimension"
    ]
