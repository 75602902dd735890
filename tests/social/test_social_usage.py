"""EpisodeUsage: sums over calls, and sums of sums that keep "cost unknown" visible."""

from dataclasses import dataclass
from typing import Any

from sotopia_are.social import EpisodeUsage


@dataclass
class Call:
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    normalized: bool = False
    repaired: bool = False

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        return {}


def test_adding_totals_adds_every_field_and_keeps_unknown_costs_counted() -> None:
    priced = EpisodeUsage.of([Call(10, 5, 0.25), Call(1, 1, 0.5)])
    unpriced = EpisodeUsage.of([Call(3, None, None)])
    assert priced + unpriced == EpisodeUsage(
        calls=3, prompt_tokens=14, completion_tokens=6, cost_usd=0.75, calls_without_cost=1
    )
    assert priced + unpriced == EpisodeUsage.of(
        [Call(10, 5, 0.25), Call(1, 1, 0.5), Call(3, None, None)]
    )


def test_total_and_sum_agree_and_an_empty_total_is_zero() -> None:
    parts = [EpisodeUsage.of([Call(2, 3, 0.125)]), EpisodeUsage.of([Call(4, 5, None)])]
    expected = EpisodeUsage(
        calls=2, prompt_tokens=6, completion_tokens=8, cost_usd=0.125, calls_without_cost=1
    )
    assert EpisodeUsage.total(parts) == expected
    assert sum(parts, start=EpisodeUsage()) == expected
    assert EpisodeUsage.total([]) == EpisodeUsage()


def test_answers_fixed_by_normalising_or_asking_again_are_counted() -> None:
    usage = EpisodeUsage.of(
        [Call(1, 1, None, normalized=True), Call(1, 1, None, repaired=True), Call(1, 1, None)]
    )
    assert (usage.calls, usage.normalized_calls, usage.repaired_calls) == (3, 1, 1)
    assert (usage + usage).repaired_calls == 2 and (usage + usage).normalized_calls == 2
