"""A panel of judges: each judge's verdict on an episode, aggregated with its spread.

Every judge's verdict is stored separately with the episode (one per
:attr:`~sotopia_are.record.Verdict.key`); :func:`panel_scores` combines them per agent and
dimension: the mean of the judges' means (each judge's mean is over its own K samples),
their spread and how many judges rated. Verdicts whose every sample failed do not count.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from sotopia_are.record import EpisodeRecord, Verdict

__all__ = ["PanelScore", "judge_verdicts", "panel_scores"]


@dataclass(frozen=True)
class PanelScore:
    """One agent's score on one dimension across judges: ``mean`` of the judges' means,
    ``sd`` their population standard deviation (0 for one judge, as for one sample of a
    verdict), ``n`` the number of judges, ``by_judge`` each judge's mean by verdict key."""

    mean: float
    sd: float
    n: int
    by_judge: dict[str, float]


def judge_verdicts(record: EpisodeRecord, judges: Sequence[str] | None = None) -> list[Verdict]:
    """``record``'s rated verdicts, in the order given; with ``judges``, only those whose
    judge model or verdict key is one of them."""
    wanted = set(judges) if judges is not None else None
    return [
        verdict
        for verdict in record.verdicts
        if verdict.rated
        and (wanted is None or verdict.judge_model in wanted or verdict.key in wanted)
    ]


def panel_scores(
    record: EpisodeRecord, judges: Sequence[str] | None = None
) -> dict[str, dict[str, PanelScore]]:
    """Per agent and dimension (``overall_score`` included) the judges' aggregate over
    :func:`judge_verdicts`; empty when no judge rated the episode. A dimension only some
    judges rated (different rubrics) counts only those."""
    collected: dict[str, dict[str, dict[str, float]]] = {}
    for verdict in judge_verdicts(record, judges):
        for agent, scores in verdict.scores.items():
            for dimension, score in scores.items():
                collected.setdefault(agent, {}).setdefault(dimension, {})[verdict.key] = score
    return {
        agent: {
            dimension: PanelScore(
                mean=math.fsum(by_judge.values()) / len(by_judge),
                sd=statistics.pstdev(by_judge.values()),
                n=len(by_judge),
                by_judge=by_judge,
            )
            for dimension, by_judge in dimensions.items()
        }
        for agent, dimensions in collected.items()
    }
