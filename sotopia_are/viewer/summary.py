"""What a batch (the episodes of one tag) adds up to: counts by status, and the
distributions of its scores.

Scores are the latest rated verdict's, as :attr:`EpisodeRecord.scores` and
:attr:`EpisodeSummary.overall` give them: one value per rated agent per episode; the
judges and rubrics they came from are named.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sotopia_are.record import EpisodeRecord, EpisodeSummary
from sotopia_are.social import EpisodeStatus

from .plots import Histogram, histogram

__all__ = ["DimensionStats", "TagDetail", "TagSummary", "tag_detail", "tag_summaries"]

OVERALL = "overall_score"


@dataclass(frozen=True)
class TagSummary:
    """One tag's episodes in brief: how many, by status, how many rated, and the
    distribution of the agents' overall scores."""

    tag: str
    episodes: int
    by_status: dict[str, int]
    rated: int
    overall: Histogram


def tag_summaries(summaries: Iterable[EpisodeSummary]) -> list[TagSummary]:
    """One :class:`TagSummary` per tag among ``summaries``, by tag name."""
    grouped: dict[str, list[EpisodeSummary]] = defaultdict(list)
    for summary in summaries:
        grouped[summary.tag].append(summary)
    return [_tag_summary(tag, grouped[tag]) for tag in sorted(grouped)]


def _tag_summary(tag: str, summaries: Sequence[EpisodeSummary]) -> TagSummary:
    statuses = Counter(summary.status.value for summary in summaries)
    scores = [score for summary in summaries for score in summary.overall.values()]
    return TagSummary(
        tag=tag,
        episodes=len(summaries),
        by_status={status.value: statuses[status.value] for status in EpisodeStatus},
        rated=sum(1 for summary in summaries if summary.overall),
        overall=histogram("overall score", scores),
    )


@dataclass(frozen=True)
class DimensionStats:
    """One model's scores on one dimension over a tag's episodes: how many, their mean
    and standard deviation (0 for one score)."""

    model: str
    dimension: str
    count: int
    mean: float
    std: float


@dataclass(frozen=True)
class TagDetail:
    """A tag's score distributions per dimension (over the rubric's range when known)
    and each model's statistics per dimension; ``judges`` name where the scores came
    from (``judge MODEL, rubric NAME`` of each episode's latest rated verdict)."""

    tag: str
    histograms: tuple[Histogram, ...]
    stats: tuple[DimensionStats, ...]
    judges: tuple[str, ...]

    @property
    def models(self) -> list[str]:
        """The models rated, in :attr:`stats` order."""
        return list(dict.fromkeys(s.model for s in self.stats))

    @property
    def dimensions(self) -> list[str]:
        """The dimensions rated, in the rubric's order, ``overall_score`` last."""
        return [h.title for h in self.histograms]

    def stat(self, model: str, dimension: str) -> DimensionStats | None:
        """``model``'s statistics on ``dimension`` (None when it has no such score)."""
        return next((s for s in self.stats if (s.model, s.dimension) == (model, dimension)), None)


def tag_detail(tag: str, records: Iterable[EpisodeRecord]) -> TagDetail:
    """The score distributions of ``records`` (the episodes of ``tag``)."""
    scores: dict[str, list[float]] = defaultdict(list)
    by_model: dict[tuple[str, str], list[float]] = defaultdict(list)
    overall: list[float] = []
    ranges: dict[str, tuple[int, int]] = {}
    judges: set[str] = set()
    for record in records:
        verdict = record.verdict_of()
        if verdict is None:
            continue
        judges.add(verdict.scores.source)
        for rating in verdict.evaluation.ratings:
            model = record.models.get(rating.agent) or "scripted"
            for name, dimension in rating.dimensions.items():
                ranges.setdefault(name, (dimension.low, dimension.high))
                scores[name].append(dimension.mean)
                by_model[(model, name)].append(dimension.mean)
            overall.append(rating.overall)
            by_model[(model, OVERALL)].append(rating.overall)
    if overall:
        scores[OVERALL] = overall
    histograms = tuple(
        histogram(name, values, *ranges.get(name, (None, None))) for name, values in scores.items()
    )
    stats = tuple(
        DimensionStats(
            model=model,
            dimension=name,
            count=len(values),
            mean=statistics.fmean(values),
            std=statistics.pstdev(values),
        )
        # By model; each model's dimensions stay in the rubric's order.
        for (model, name), values in sorted(by_model.items(), key=lambda item: item[0][0])
    )
    return TagDetail(tag, histograms, stats, tuple(sorted(judges)))
