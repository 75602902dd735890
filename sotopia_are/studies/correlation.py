"""Pearson and Spearman correlations with seeded bootstrap confidence intervals.

Pure standard library. A correlation is *undefined* (None) when it cannot be computed:
fewer than two pairs, or one side constant (no variance) — never a made-up 0 or NaN.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Sequence

__all__ = ["Statistic", "bootstrap_ci", "pearson", "ranks", "spearman"]

Statistic = Callable[[Sequence[float], Sequence[float]], float | None]
"""A statistic of paired samples (None where undefined), e.g. :func:`pearson`."""


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r of the pairs ``(xs[i], ys[i])``, in [-1, 1]; None when undefined."""
    if len(xs) != len(ys):
        raise ValueError(f"paired samples differ in length: {len(xs)} and {len(ys)}")
    if len(xs) < 2 or _constant(xs) or _constant(ys):
        return None
    mean_x, mean_y = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)
    dx = [x - mean_x for x in xs]
    dy = [y - mean_y for y in ys]
    spread = math.sqrt(math.fsum(d * d for d in dx) * math.fsum(d * d for d in dy))
    if spread == 0.0:  # variance lost to rounding: as good as constant
        return None
    # Rounding can carry |r| a hair past 1.
    return max(-1.0, min(1.0, math.fsum(a * b for a, b in zip(dx, dy, strict=True)) / spread))


def ranks(values: Sequence[float]) -> list[float]:
    """The 1-based rank of each value, ties sharing their average rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            result[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return result


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of the ranks (ties averaged); None when undefined."""
    if len(xs) != len(ys):
        raise ValueError(f"paired samples differ in length: {len(xs)} and {len(ys)}")
    return pearson(ranks(xs), ranks(ys))


def bootstrap_ci(
    xs: Sequence[float],
    ys: Sequence[float],
    statistic: Statistic,
    *,
    groups: Sequence[Hashable] | None = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """The percentile bootstrap interval of ``statistic`` over the pairs, the same for the
    same ``seed``. With ``groups``, whole groups are resampled (pairs from one episode stay
    together). Resamples where the statistic is undefined are dropped; None when fewer
    than half of them are defined, or with fewer than three pairs or groups."""
    if len(xs) != len(ys) or (groups is not None and len(groups) != len(xs)):
        raise ValueError("paired samples and groups must have the same length")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    members: dict[Hashable, list[int]] = {}
    for index, group in enumerate(groups if groups is not None else range(len(xs))):
        members.setdefault(group, []).append(index)
    clusters = list(members.values())
    if len(clusters) < 3 or len(xs) < 3:
        return None
    rng = random.Random(seed)
    values: list[float] = []
    for _ in range(resamples):
        picked = [i for cluster in rng.choices(clusters, k=len(clusters)) for i in cluster]
        value = statistic([xs[i] for i in picked], [ys[i] for i in picked])
        if value is not None:
            values.append(value)
    if len(values) * 2 < resamples:
        return None
    values.sort()
    tail = (1 - confidence) / 2
    return _quantile(values, tail), _quantile(values, 1 - tail)


def _constant(values: Sequence[float]) -> bool:
    return all(v == values[0] for v in values)


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolating linearly between neighbours."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
