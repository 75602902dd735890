"""`RateLimiter`: a token bucket per key (a seat), bounding how fast it may post actions."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

__all__ = ["RateLimiter"]


class RateLimiter:
    """At most ``burst`` requests at once per key, refilled at ``per_second``.

    :meth:`allow` says whether one more request of a key may go now.
    """

    def __init__(
        self,
        per_second: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_second <= 0 or burst < 1:
            raise ValueError("a rate limit needs per_second > 0 and burst >= 1")
        self.per_second = per_second
        self.burst = burst
        self._clock = clock
        self._buckets: dict[Hashable, tuple[float, float]] = {}

    def allow(self, key: Hashable) -> float:
        """0.0 if a request of ``key`` may go now (and count it), else the seconds to
        wait before one may."""
        now = self._clock()
        level, then = self._buckets.get(key, (float(self.burst), now))
        level = min(float(self.burst), level + (now - then) * self.per_second)
        if level >= 1.0:
            self._buckets[key] = (level - 1.0, now)
            return 0.0
        self._buckets[key] = (level, now)
        return (1.0 - level) / self.per_second
