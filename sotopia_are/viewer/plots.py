"""Score distributions as histograms the templates draw as inline SVG (no scripts, no
fonts or files from elsewhere: the page works offline)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Bar", "Histogram", "histogram"]

WIDTH = 240
"""The drawing's width in SVG units; bars share it equally."""
HEIGHT = 80
"""The tallest bar's height in SVG units."""


@dataclass(frozen=True)
class Bar:
    """One bin: scores rounded to ``value``, ``count`` of them, drawn at ``x`` with
    ``width`` and ``height`` (SVG units, bars grow up from the baseline)."""

    value: int
    count: int
    x: float
    width: float
    height: float


@dataclass(frozen=True)
class Histogram:
    """The bars of a score distribution, one per whole score from ``low`` to ``high``;
    ``total`` scores in all, their ``mean`` (None when there are none)."""

    title: str
    low: int
    high: int
    bars: tuple[Bar, ...]
    total: int
    mean: float | None
    width: int = WIDTH
    height: int = HEIGHT


def histogram(
    title: str, scores: Sequence[float], low: int | None = None, high: int | None = None
) -> Histogram:
    """The histogram of ``scores``, each counted at its nearest whole number, over
    ``low``..``high`` (default: the scores' own range, widened to hold every score)."""
    rounded = [round(score) for score in scores]
    floor = min([*rounded, *([low] if low is not None else [])], default=0)
    ceiling = max([*rounded, *([high] if high is not None else [])], default=0)
    counts = Counter(rounded)
    tallest = max(counts.values(), default=0)
    values = range(floor, ceiling + 1)
    width = WIDTH / len(values)
    bars = tuple(
        Bar(
            value=value,
            count=counts[value],
            x=round(index * width, 2),
            width=round(width, 2),
            height=round(HEIGHT * counts[value] / tallest, 2) if tallest else 0.0,
        )
        for index, value in enumerate(values)
    )
    mean = math.fsum(scores) / len(scores) if scores else None
    return Histogram(title, floor, ceiling, bars, len(scores), mean)
