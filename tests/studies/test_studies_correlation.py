"""The correlation math of `agreement`: known values, undefined cases, and its laws."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.studies.correlation import bootstrap_ci, pearson, ranks, spearman


def test_perfect_and_anti_correlation() -> None:
    assert pearson([1, 2, 3, 4], [2, 4, 6, 8]) == pytest.approx(1.0)
    assert pearson([1, 2, 3, 4], [8, 6, 4, 2]) == pytest.approx(-1.0)
    # Monotone but not linear: Spearman sees a perfect order, Pearson does not.
    assert spearman([1, 2, 3, 4], [1, 4, 9, 100]) == pytest.approx(1.0)
    # Sxy = 151, Sxx = 5, Syy = 6849.
    assert pearson([1, 2, 3, 4], [1, 4, 9, 100]) == pytest.approx(151 / math.sqrt(5 * 6849))


def test_a_value_computed_by_hand() -> None:
    # x = 1..5, y = 2,1,4,3,5: Sxy = 8, Sxx = Syy = 10, so r = 0.8.
    assert pearson([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    # Ties share their average rank: y's ranks are 1, 2.5, 2.5, 4.
    assert ranks([3, 7, 7, 9]) == [1.0, 2.5, 2.5, 4.0]
    assert spearman([1, 2, 3, 4], [3, 7, 7, 9]) == pytest.approx(
        pearson([1, 2, 3, 4], [1, 2.5, 2.5, 4])
    )


def test_undefined_is_none_not_zero() -> None:
    assert pearson([1, 2, 3], [5, 5, 5]) is None  # the judge gave everyone the same
    assert spearman([4, 4, 4], [1, 2, 3]) is None
    assert pearson([1], [2]) is None
    assert pearson([], []) is None
    with pytest.raises(ValueError, match="differ in length"):
        pearson([1, 2], [1, 2, 3])


def test_bootstrap_ci_is_seeded_and_brackets_the_estimate() -> None:
    xs = [1, 2, 3, 4, 5, 6, 7, 8]
    ys = [2, 1, 4, 3, 6, 5, 8, 7]
    first = bootstrap_ci(xs, ys, pearson, seed=7)
    assert first is not None
    assert first == bootstrap_ci(xs, ys, pearson, seed=7)
    assert first != bootstrap_ci(xs, ys, pearson, seed=8)
    low, high = first
    estimate = pearson(xs, ys)
    assert estimate is not None
    assert -1 <= low <= estimate <= high <= 1


def test_bootstrap_ci_undefined_with_too_few_episodes_or_constant_scores() -> None:
    assert bootstrap_ci([1, 2], [1, 2], pearson) is None
    # Six pairs but only two episodes: resampling two clusters says nothing.
    assert bootstrap_ci([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6], pearson, groups="aaabbb") is None
    assert bootstrap_ci([1, 2, 3, 4], [5, 5, 5, 5], pearson) is None


def test_bootstrap_keeps_an_episodes_pairs_together() -> None:
    # Within each episode the two agents are perfectly ordered, so every resample of
    # whole episodes gives r = 1; resampling pairs alone could not tell.
    xs = [1, 2, 3, 4, 5, 6]
    ys = [1, 2, 3, 4, 5, 6]
    assert bootstrap_ci(xs, ys, pearson, groups=["a", "a", "b", "b", "c", "c"]) == (
        pytest.approx(1.0),
        pytest.approx(1.0),
    )


scores = st.lists(
    st.tuples(st.integers(-10, 10), st.integers(-10, 10)), min_size=2, max_size=30
).map(lambda pairs: ([float(x) for x, _ in pairs], [float(y) for _, y in pairs]))


@given(scores)
def test_correlations_lie_in_minus_one_to_one_and_are_symmetric(pairs: tuple) -> None:
    xs, ys = pairs
    for statistic in (pearson, spearman):
        value = statistic(xs, ys)
        assert value == statistic(ys, xs)
        assert value is None or -1.0 <= value <= 1.0


@given(
    scores,
    st.floats(0.1, 100, allow_nan=False),
    st.floats(-50, 50, allow_nan=False),
)
def test_invariant_to_positive_affine_transforms(pairs: tuple, scale: float, shift: float) -> None:
    xs, ys = pairs
    moved = [scale * x + shift for x in xs]
    for statistic in (pearson, spearman):
        before, after = statistic(xs, ys), statistic(moved, ys)
        if before is None:
            assert after is None
        else:
            assert after is not None
            assert math.isclose(after, before, abs_tol=1e-9)
    # A negative scale flips the sign.
    flipped = pearson([-x for x in xs], ys)
    original = pearson(xs, ys)
    assert (flipped is None) == (original is None)
    if flipped is not None and original is not None:
        assert math.isclose(flipped, -original, abs_tol=1e-9)
