"""`EpisodeFilter`: which stored episodes the viewer lists (tag, model, status, score)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sotopia_are.record import EpisodeSummary
from sotopia_are.social import EpisodeStatus

__all__ = ["EpisodeFilter"]


@dataclass(frozen=True)
class EpisodeFilter:
    """What an episode must match to be listed; an unset field matches every episode.

    ``model`` matches an episode where some agent played that model; ``min_score`` and
    ``max_score`` bound the latest verdict's ``overall_score``, and an episode matches
    when some agent's score lies within both bounds (so ``max_score=2`` finds every
    episode where someone did badly); an unrated episode never matches a score bound.
    """

    tag: str | None = None
    model: str | None = None
    status: EpisodeStatus | None = None
    min_score: float | None = None
    max_score: float | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> EpisodeFilter:
        """The filter a query string gives (``tag``, ``model``, ``status``, ``min_score``,
        ``max_score``); empty values are unset. ``ValueError`` naming a bad value."""

        def text(name: str) -> str | None:
            return query.get(name, "").strip() or None

        def number(name: str) -> float | None:
            value = text(name)
            if value is None:
                return None
            try:
                return float(value)
            except ValueError:
                raise ValueError(f"{name} must be a number, not {value!r}") from None

        status = text("status")
        if status is not None and status not in {s.value for s in EpisodeStatus}:
            known = ", ".join(s.value for s in EpisodeStatus)
            raise ValueError(f"unknown status {status!r} (known: {known})")
        return cls(
            tag=text("tag"),
            model=text("model"),
            status=EpisodeStatus(status) if status is not None else None,
            min_score=number("min_score"),
            max_score=number("max_score"),
        )

    def matches(self, summary: EpisodeSummary) -> bool:
        """Whether ``summary``'s episode passes every filter set."""
        if self.tag is not None and summary.tag != self.tag:
            return False
        if self.model is not None and self.model not in summary.models:
            return False
        if self.status is not None and summary.status is not self.status:
            return False
        if self.min_score is None and self.max_score is None:
            return True
        low = self.min_score if self.min_score is not None else float("-inf")
        high = self.max_score if self.max_score is not None else float("inf")
        return any(low <= score <= high for score in summary.overall.values())

    def select(self, summaries: Iterable[EpisodeSummary]) -> list[EpisodeSummary]:
        """The summaries that match, in their order."""
        return [summary for summary in summaries if self.matches(summary)]
