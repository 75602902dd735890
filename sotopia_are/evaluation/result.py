"""What a judge returns: each participant's scores per dimension, the failures, the calls.

Scores are never invented: a dimension's statistics are computed from the samples that
produced a valid answer only, and a sample that did not is a :class:`JudgeFailure` with
the model's raw outputs. When no sample succeeded there are no ratings at all.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from sotopia_are.llm import Attempt, LLMCall, Usage
from sotopia_are.llm.valid_parts import of_valid_fields

__all__ = ["AgentRating", "DimensionScore", "Evaluation", "JudgeFailure"]


class DimensionScore(BaseModel):
    """One participant's scores on one dimension over the judge's valid samples.

    ``mean`` is the arithmetic mean; the spread is ``std`` (the population standard
    deviation, 0 for one sample) together with ``min`` and ``max``. ``reasonings`` are
    the judge's reasons, one per sample, in sample order.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    low: int
    high: int
    scores: list[int] = Field(min_length=1)
    reasonings: list[str]
    mean: float
    std: float
    min: int
    max: int

    @classmethod
    def of(
        cls, name: str, low: int, high: int, scores: Sequence[int], reasonings: Sequence[str]
    ) -> DimensionScore:
        """The statistics of ``scores`` (at least one)."""
        return cls(
            name=name,
            low=low,
            high=high,
            scores=list(scores),
            reasonings=list(reasonings),
            mean=statistics.fmean(scores),
            # One sample (the default) has no spread; pstdev's exact arithmetic is slow.
            std=statistics.pstdev(scores) if len(scores) > 1 else 0.0,
            min=min(scores),
            max=max(scores),
        )

    @classmethod
    def of_valid_scores(
        cls, name: str, low: int, high: int, scores: list[int], reasonings: list[str]
    ) -> DimensionScore:
        """:meth:`of` for parts that are valid already, without validating them again: a
        judge's scores and reasonings from its validated answers (at least one), the
        rubric's dimension. The lists are kept, not copied."""
        if len(scores) == 1:
            # One sample (the default): what fmean, pstdev, min and max give for it.
            [score] = scores
            mean, std, low_score, high_score = float(score), 0.0, score, score
        else:
            mean, std = statistics.fmean(scores), statistics.pstdev(scores)
            low_score, high_score = min(scores), max(scores)
        return of_valid_fields(
            cls,
            {
                "name": name,
                "low": low,
                "high": high,
                "scores": scores,
                "reasonings": reasonings,
                "mean": mean,
                "std": std,
                "min": low_score,
                "max": high_score,
            },
        )


class AgentRating(BaseModel):
    """One participant's rating: ``overall`` is the unweighted mean of the dimension
    means (as Sotopia's ``unweighted_aggregate_evaluate`` computes it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    overall: float
    dimensions: dict[str, DimensionScore]

    @classmethod
    def of(cls, agent: str, dimensions: Sequence[DimensionScore]) -> AgentRating:
        """The rating made of ``dimensions`` (in rubric order)."""
        return cls(
            agent=agent,
            overall=statistics.fmean(d.mean for d in dimensions),
            dimensions={d.name: d for d in dimensions},
        )

    @classmethod
    def of_valid_scores(cls, agent: str, dimensions: Sequence[DimensionScore]) -> AgentRating:
        """:meth:`of` for dimensions made by :meth:`DimensionScore.of_valid_scores` (or
        validated), without validating them again."""
        return of_valid_fields(
            cls,
            {
                "agent": agent,
                "overall": statistics.fmean([d.mean for d in dimensions]),
                "dimensions": {d.name: d for d in dimensions},
            },
        )

    def scores(self) -> dict[str, float]:
        """``{dimension: mean score}`` in rubric order."""
        return {name: d.mean for name, d in self.dimensions.items()}

    def comment(self) -> str:
        """The judge's reasoning for this agent: ``NAME comments:`` then one line per
        dimension (per sample, numbered, when it rated more than once)."""
        lines = [f"{self.agent} comments:"]
        for name, dimension in self.dimensions.items():
            if len(dimension.reasonings) == 1:
                lines.append(f"{name}: {dimension.reasonings[0]}")
            else:
                count = len(dimension.reasonings)
                lines += [
                    f"{name} [{number}/{count}]: {reasoning}"
                    for number, reasoning in enumerate(dimension.reasonings, start=1)
                ]
        return "\n".join(lines)


class JudgeFailure(BaseModel):
    """A judge sample that produced no valid rating.

    ``attempts`` are the model's answers (``raw_text``) and the error each got, as the
    LLM layer recorded them; ``raw_outputs`` lists just the answers' text.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    sample: int
    error_type: str
    error: str
    attempts: list[Attempt] = []

    @property
    def raw_outputs(self) -> list[str]:
        """The text of every answer the model gave for this sample."""
        return [a.raw_text for a in self.attempts if a.raw_text is not None]


class Evaluation(BaseModel):
    """The judge's verdict on one episode.

    ``ratings`` has one entry per participant (in participant order) when at least one of
    the ``samples`` succeeded, and is empty otherwise; ``valid_samples`` says how many
    succeeded. ``calls`` are the judge's LLM calls, one per sample, in sample order.
    ``warnings`` say what is suspicious in the verdict given the episode (see
    :func:`~sotopia_are.evaluation.judge_warnings`); the scores stay as the judge gave them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    rubric: str
    model: str
    agent_names: list[str]
    samples: int
    valid_samples: int
    ratings: list[AgentRating] = []
    failures: list[JudgeFailure] = []
    calls: list[LLMCall] = []
    warnings: list[str] = []

    @property
    def ok(self) -> bool:
        """Whether every sample produced a valid rating."""
        return not self.failures

    @property
    def failed(self) -> bool:
        """Whether no sample produced a valid rating (there are no scores)."""
        return not self.ratings

    def rating(self, agent: str) -> AgentRating:
        """``agent``'s rating; ``KeyError`` when it has none (unknown agent, or the judge
        failed)."""
        for rating in self.ratings:
            if rating.agent == agent:
                return rating
        raise KeyError(f"no rating for {agent!r}; rated: {[r.agent for r in self.ratings]}")

    def usage(self) -> Usage:
        """Tokens, cost and latency of the judge's calls."""
        return Usage.of(self.calls)
