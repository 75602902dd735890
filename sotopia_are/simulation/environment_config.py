"""How an environment runs (:class:`EnvironmentConfig`) and where it is in its lifecycle.

Re-exported by :mod:`sotopia_are.simulation.environment`, ARE's import path.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["EnvironmentConfig", "EnvironmentState", "EnvironmentType"]


@dataclass
class EnvironmentConfig:
    """How an :class:`Environment` runs (ARE's fields and defaults, plus ``virtual_clock``).

    - start_time: simulated start time in seconds (None means 0).
    - duration: simulated seconds to run (None: until stopped or out of events).
    - time_increment_in_seconds: seconds per tick, >= 1; condition and validation checks
      run once per tick, and the time-based loop advances one tick at a time (its last
      tick is at the end of the duration, even when that comes sooner than a full tick).
    - oracle_mode: run OracleEvents (otherwise they and their dependants never run).
    - dump_dir: in oracle mode, where to write the final state (environment_state.json).
    - exit_when_no_events: stop the loop once no event is left (use without an agent);
      checks without a timeout do not count once each had a final evaluation.
    - queue_based_loop: jump time to the next event instead of ticking.
    - wait_for_user_input_timeout: seconds to wait for user input (for agent runners).
    - verbose: log each tick at INFO level.
    - virtual_clock: never read the wall clock (default: True iff queue_based_loop); a
      virtual time-based loop advances one tick per iteration without sleeping.
    - log_every_condition_check: log each evaluation of a condition check, as ARE does
      (ids ``<id>-CHECK_<n>``, return value True/False); False logs only the evaluation
      that held (or raised), under the check's own id.
    """

    start_time: float | None = 0
    duration: float | None = 60
    time_increment_in_seconds: int = 1
    oracle_mode: bool = False
    dump_dir: str | None = None
    exit_when_no_events: bool = False
    queue_based_loop: bool = False
    wait_for_user_input_timeout: float | None = None
    verbose: bool = True
    virtual_clock: bool | None = None
    log_every_condition_check: bool = True

    def __post_init__(self) -> None:
        def number(value: object) -> bool:
            return isinstance(value, int | float) and not isinstance(value, bool)

        problems: list[str] = []
        increment = self.time_increment_in_seconds
        if not number(increment) or increment < 1:
            problems.append(
                f"time_increment_in_seconds must be a number of seconds >= 1, got {increment!r}"
            )
        if self.start_time is not None and not number(self.start_time):
            problems.append(f"start_time must be seconds or None, got {self.start_time!r}")
        if self.duration is not None and (not number(self.duration) or self.duration < 0):
            problems.append(f"duration must be seconds >= 0 or None, got {self.duration!r}")
        timeout = self.wait_for_user_input_timeout
        if timeout is not None and (not number(timeout) or timeout < 0):
            problems.append(
                f"wait_for_user_input_timeout must be seconds >= 0 or None, got {timeout!r}"
            )
        if problems:
            raise ValueError("invalid EnvironmentConfig: " + "; ".join(problems))

    @property
    def uses_virtual_clock(self) -> bool:
        """Whether the environment's clock is virtual."""
        return self.queue_based_loop if self.virtual_clock is None else self.virtual_clock


class EnvironmentState(enum.Enum):
    """Lifecycle of an environment.

    SETUP: being set up (initial). RUNNING: events are processed and logged. PAUSED:
    nothing is processed until resumed. STOPPED: finished. FAILED: stopped by an error or
    a failed validation (see ``Environment.exception`` / the log).
    """

    SETUP = "SETUP"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"


class EnvironmentType(enum.Enum):
    """Where the environment is driven from (informational)."""

    UNKNOWN = "UNKNOWN"
    CLI = "CLI"
    GUI = "GUI"
