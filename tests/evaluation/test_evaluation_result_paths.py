"""A judge's ratings made of its validated answers are the validated ratings."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.evaluation.result import AgentRating, DimensionScore

scores = st.lists(st.integers(-10, 10), min_size=1, max_size=5)


@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=8), scores, st.integers(-10, 0), st.integers(0, 10)),
        min_size=1,
        max_size=4,
        unique_by=lambda dimension: dimension[0],
    ),
    st.text(max_size=8),
)
def test_ratings_of_valid_scores_are_the_validated_ratings(
    dimensions: list[tuple[str, list[int], int, int]], agent: str
) -> None:
    built = [
        DimensionScore.of_valid_scores(name, low, high, list(s), [f"r{i}" for i in range(len(s))])
        for name, s, low, high in dimensions
    ]
    validated = [
        DimensionScore.of(name, low, high, s, [f"r{i}" for i in range(len(s))])
        for name, s, low, high in dimensions
    ]
    assert built == validated
    assert [b.model_dump_json() for b in built] == [v.model_dump_json() for v in validated]
    rating = AgentRating.of_valid_scores(agent, built)
    assert rating == AgentRating.of(agent, validated)
    assert rating.model_dump_json() == AgentRating.of(agent, validated).model_dump_json()
