"""The simulation clock: wall-clock driven (ARE's default) or virtual (never reads the wall).

A real clock runs at wall speed from ``start_time`` and can be paused and shifted; a virtual
clock stands still until it is moved with ``add_offset``/``set_time``, which is what makes
queue-based runs deterministic.
"""

from __future__ import annotations

import time as _time

__all__ = ["TimeManager"]


class TimeManager:
    """Simulated time in seconds since the epoch: ``start_time`` + elapsed + offsets.

    ``TimeManager()`` starts at the wall-clock time now; ``TimeManager(virtual=True)``
    starts at 0 (or ``start_time``) and moves only when told to.
    """

    def __init__(self, start_time: float | None = None, *, virtual: bool = False) -> None:
        self.virtual = virtual
        self.reset(start_time)

    def reset(self, start_time: float | None = None) -> None:
        """Restart the clock at ``start_time`` (default: now for a real clock, 0 for virtual),
        unpaused and without offset."""
        if start_time is None:
            start_time = 0.0 if self.virtual else _time.time()
        self.start_time = float(start_time)
        self.offset = 0.0
        self.paused = False
        self._real_start = 0.0 if self.virtual else _time.monotonic()
        self._pause_started = 0.0
        self._paused_total = 0.0

    def _elapsed(self) -> float:
        if self.virtual:
            return 0.0
        now = self._pause_started if self.paused else _time.monotonic()
        return now - self._real_start - self._paused_total

    def time(self) -> float:
        """The simulated time now."""
        if self.virtual:
            return self.start_time + self.offset
        return self.start_time + self._elapsed() + self.offset

    def time_passed(self) -> float:
        """Simulated seconds since the start (offsets included, pauses excluded)."""
        return self._elapsed() + self.offset

    def real_time_passed(self) -> float:
        """Wall-clock seconds since the start, pauses included (0 on a virtual clock)."""
        return 0.0 if self.virtual else _time.monotonic() - self._real_start

    def set_offset(self, offset: float) -> None:
        """Set the offset added to the elapsed time to ``offset`` seconds."""
        self.offset = offset

    def pause(self) -> None:
        """Freeze the clock (a virtual clock is frozen anyway; this only records the state)."""
        if not self.paused:
            self.paused = True
            self._pause_started = 0.0 if self.virtual else _time.monotonic()

    def resume(self) -> None:
        """Let a paused clock run again from where it stopped."""
        if self.paused:
            if not self.virtual:
                self._paused_total += _time.monotonic() - self._pause_started
            self.paused = False

    def add_offset(self, offset: float) -> None:
        """Jump the clock by ``offset`` seconds (forward if positive)."""
        self.offset += offset

    def set_time(self, new_time: float) -> None:
        """Jump the clock to ``new_time``; it never moves backwards."""
        now = self.time()
        if new_time < now:
            raise ValueError(f"the clock cannot move backwards (now {now}, asked {new_time})")
        self.offset += new_time - now
