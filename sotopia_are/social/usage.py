"""`EpisodeUsage`: token and cost totals of an episode's model calls."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .protocol import CallRecord

__all__ = ["EpisodeUsage"]


@dataclass(frozen=True, slots=True)
class EpisodeUsage:
    """Totals over calls: add them with ``+`` or :meth:`total`, or build with :meth:`of`.

    ``cost_usd`` sums the known costs; ``calls_without_cost`` counts the calls whose cost
    is unknown, so a partial total is never mistaken for a full one. Adding keeps that
    meaning: known costs add up and the unknown counts add up (unlike
    ``sotopia_are.llm.Usage``, ``cost_usd`` is never ``None``; a zero ``cost_usd`` with
    ``calls_without_cost > 0`` means "nothing known", not "free"). ``normalized_calls`` and
    ``repaired_calls`` count the answers accepted only after normalising their form or
    after asking the model again."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls_without_cost: int = 0
    normalized_calls: int = 0
    repaired_calls: int = 0

    @classmethod
    def of(cls, records: Iterable[CallRecord]) -> EpisodeUsage:
        """The totals of ``records``."""
        calls = prompt = completion = unknown = normalized = repaired = 0
        cost = 0.0
        for record in records:
            calls += 1
            normalized += record.normalized
            repaired += record.repaired
            prompt += record.prompt_tokens or 0
            completion += record.completion_tokens or 0
            if record.cost_usd is None:
                unknown += 1
            else:
                cost += record.cost_usd
        return cls(calls, prompt, completion, cost, unknown, normalized, repaired)

    @classmethod
    def total(cls, usages: Iterable[EpisodeUsage]) -> EpisodeUsage:
        """The sum of ``usages`` (an empty sum is all zeros); the same as
        ``sum(usages, start=EpisodeUsage())``."""
        result = cls()
        for usage in usages:
            result = result + usage
        return result

    def __add__(self, other: EpisodeUsage) -> EpisodeUsage:
        """Field-wise sum of two totals."""
        return EpisodeUsage(
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            calls_without_cost=self.calls_without_cost + other.calls_without_cost,
            normalized_calls=self.normalized_calls + other.normalized_calls,
            repaired_calls=self.repaired_calls + other.repaired_calls,
        )

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens
