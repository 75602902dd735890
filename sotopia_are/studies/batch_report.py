"""What a batch says about itself, while it runs and after: its progress, its plan and
result in words, and what the store holds of it.

Plain text, so a terminal, a job log and a Python script read the same lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sotopia_are.llm import InFlight
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import EpisodeStore

if TYPE_CHECKING:
    from .batch import BatchPlan, BatchResult

__all__ = [
    "BatchProgress",
    "StoredBatch",
    "describe_plan",
    "stored_batch",
    "summary_rows",
    "unfinished_causes",
]


@dataclass(frozen=True)
class BatchProgress:
    """Where a running batch stands: of the ``total`` episodes it plays or rates, how many
    ``started``, finished usable (``done``: complete, and rated when judged) or not
    (``failed``); the model requests ``in_flight`` and the model ``calls`` made so far."""

    total: int
    started: int = 0
    done: int = 0
    failed: int = 0
    in_flight: InFlight = field(default_factory=InFlight)
    calls: int = 0
    elapsed_s: float = 0.0

    @property
    def running(self) -> int:
        """Episodes started and not finished."""
        return self.started - self.done - self.failed

    @property
    def finished(self) -> int:
        """Episodes finished, usable or not."""
        return self.done + self.failed

    @property
    def calls_per_s(self) -> float:
        """Model calls a second so far."""
        return self.calls / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace so far (None before the first episode finishes)."""
        if not self.finished or self.elapsed_s <= 0:
            return None
        return self.elapsed_s / self.finished * (self.total - self.finished)

    def describe(self) -> str:
        """One plain line: ``12/50 done, 1 failed, 4 running; 8 calls in flight, 3.1
        calls/s, ETA 2 min``."""
        parts = [f"{self.done}/{self.total} done, {self.failed} failed, {self.running} running"]
        flight = self.in_flight.describe()
        pace = f"{self.calls_per_s:.1f} calls/s"
        eta = self.eta_s
        tail = ", ".join(p for p in (flight, pace, f"ETA {_duration(eta)}" if eta else "") if p)
        return "; ".join([*parts, tail])


def _duration(seconds: float) -> str:
    """``42 s``, ``7 min``, ``2.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass(frozen=True)
class StoredBatch:
    """How a batch's episodes stand in the store: how many of each status, and how many of
    the complete ones are rated."""

    tag: str
    statuses: Mapping[EpisodeStatus, int]
    rated: int

    def describe(self) -> str:
        """``22 complete (20 rated), 5 incomplete, 3 failed`` (``none`` when empty)."""
        parts = [
            f"{count} {status.value}"
            + (f" ({self.rated} rated)" if status is EpisodeStatus.COMPLETE else "")
            for status, count in self.statuses.items()
            if count
        ]
        return ", ".join(parts) or "none"


def stored_batch(store: EpisodeStore, tag: str) -> StoredBatch:
    """What the store holds of the batch ``tag`` (unreadable keys are not counted)."""
    episodes = store.list_episodes(tag=tag, on_unreadable=lambda _: None)
    statuses = {status: sum(e.status is status for e in episodes) for status in EpisodeStatus}
    rated = sum(e.status is EpisodeStatus.COMPLETE and bool(e.scores) for e in episodes)
    return StoredBatch(tag, statuses, rated)


def describe_plan(plan: BatchPlan) -> list[str]:
    """The plan in lines: how many episodes, already complete, to rate only, to play; and
    the episodes left to another run or given up on (each with its reason)."""
    lines = [
        f"batch {plan.tag}: {len(plan.planned)} episodes; already complete {plan.skipped}, "
        f"to rate only {plan.rate_only}, to play {plan.to_play}"
    ]
    if plan.busy:
        lines.append(
            f"leaving {len(plan.busy)} episodes to the run still playing them (an event in "
            f"the last {plan.stale_after:g} s; see stale_after)"
        )
    if plan.given_up:
        lines.append(
            f"not retrying {len(plan.given_up)} episodes started {plan.max_attempts} times or "
            "more (see max_attempts):"
        )
        lines += [f"  given up: {episode_id}: {why}" for episode_id, why in plan.given_up.items()]
    return lines


def unfinished_causes(result: BatchResult) -> list[tuple[int, str]]:
    """Why episodes of the batch are unfinished: ``(count, cause)`` for each cause seen;
    the counts add up to :attr:`BatchResult.unfinished`."""
    outcomes = result.outcomes
    causes = [
        (sum(o.status is EpisodeStatus.FAILED for o in outcomes), "failed"),
        (sum(o.status is EpisodeStatus.INCOMPLETE for o in outcomes), "interrupted"),
        (sum(o.unrated for o in outcomes), "not rated (the judge failed)"),
        (sum(o.status is EpisodeStatus.RUNNING for o in outcomes), "started by another run"),
        (len(result.plan.busy), "left to a run still playing them"),
        (len(result.plan.given_up), "given up after max_attempts"),
    ]
    return [(count, cause) for count, cause in causes if count]


def summary_rows(result: BatchResult) -> list[tuple[str, str]]:
    """What the batch came to, as ``(what, value)`` rows: the plan's counts (they add up
    to the episodes in the batch), how the episodes run finished, the pace."""
    outcomes, plan, elapsed = result.outcomes, result.plan, result.elapsed_s
    complete = sum(o.status is EpisodeStatus.COMPLETE for o in outcomes)
    rows = [
        ("episodes in the batch", len(plan.planned)),
        ("already complete (skipped)", plan.skipped),
        ("rated only (complete before)", plan.rate_only),
        ("played", plan.to_play),
        ("left to another run / given up", f"{len(plan.busy)} / {len(plan.given_up)}"),
        ("finished complete", complete),
        ("finished not complete", len(outcomes) - complete),
        ("judge failed (complete, not rated)", sum(o.unrated for o in outcomes)),
        ("rated, with judge warnings", sum(bool(o.judge_warnings) for o in outcomes)),
        ("worker processes", result.workers),
        ("wall time", f"{elapsed:.1f} s"),
        ("episodes/s", f"{len(outcomes) / elapsed:.1f}" if elapsed > 0 else "-"),
        ("model calls/s", f"{result.usage.calls / elapsed:.1f}" if elapsed > 0 else "-"),
    ]
    return [(what, str(value)) for what, value in rows]
