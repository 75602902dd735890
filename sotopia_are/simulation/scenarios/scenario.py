"""Scenarios: the apps, events and hints of one simulation, built once by ``initialize``."""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass
from typing import Any, TypeVar

from sotopia_are.simulation.apps.app import App, derive_seed
from sotopia_are.simulation.ids import id_namespace
from sotopia_are.simulation.types import AbstractEvent, CapabilityTag, Hint, OracleEvent

__all__ = ["Scenario", "ScenarioStatus", "ScenarioValidationResult"]

AppT = TypeVar("AppT", bound=App)


class ScenarioStatus(enum.Enum):
    """Where a scenario stands in review (ARE's values, kept verbatim)."""

    Draft = "Draft"
    AwaitingReview = "AwaitingReview"
    Valid = "Valid"
    Invalid = "Invalid"
    Abandoned = "Abandoned"
    Safe = "safe"
    Violating = "violating"


@dataclass
class ScenarioValidationResult:
    """How a run of a scenario was judged: success (None: the run or the judge failed),
    the exception if any, where traces were exported, why, and how long it took."""

    success: bool | None
    exception: Exception | None = None
    export_path: str | None = None
    rationale: str | None = None
    duration: float | None = None


class Scenario:
    """A simulation to run: apps, the events that drive them, and their settings.

    Subclasses set fields as class attributes and override :meth:`init_and_populate_apps`
    and :meth:`build_events_flow`; any field can also be passed to the constructor.
    :meth:`initialize` builds the scenario once: every app is seeded from ``seed`` and
    event ids made while building are deterministic for ``(scenario_id, seed)``.
    """

    scenario_id: str = "scenario"
    seed: int = 0
    start_time: float | None = 0.0
    duration: float | None = None
    time_increment_in_seconds: int = 1
    queue_based_loop: bool = False
    nb_turns: int | None = None
    tags: tuple[CapabilityTag | str, ...] = ()
    """ARE's capability tags; free-form strings for tags that are not one."""
    apps: list[App] | None
    events: list[AbstractEvent]
    hints: list[Hint] | None

    def __init__(self, **fields: Any) -> None:
        self.apps = None
        self.events = []
        self.hints = None
        for name, value in fields.items():
            if name.startswith("_") or not hasattr(self, name):
                raise TypeError(f"Scenario has no field {name!r}")
            setattr(self, name, value)
        self._initialized = False

    @property
    def initialized(self) -> bool:
        """Whether :meth:`initialize` has run."""
        return self._initialized

    @property
    def rng(self) -> random.Random:
        """A fresh ``random.Random`` for scenario-level choices, seeded from the id and seed."""
        return random.Random(derive_seed(self.seed, f"scenario:{self.scenario_id}"))

    def initialize(self, *args: Any, **kwargs: Any) -> None:
        """Build apps and events once (a second call does nothing)."""
        if self._initialized:
            return
        with id_namespace(f"scenario:{self.scenario_id}:{self.seed}"):
            self.init_and_populate_apps(*args, **kwargs)
            for app in self.apps or []:
                app.set_seed(self.seed)
            self.build_events_flow()
        self._initialized = True

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        """Create ``self.apps`` and fill them with data (default: keep the given apps)."""

    def build_events_flow(self) -> None:
        """Create ``self.events`` (default: keep the given events)."""

    def get_app(self, name: str) -> App:
        """The app called ``name``; KeyError naming the available apps otherwise."""
        for app in self.apps or []:
            if app.name == name:
                return app
        names = ", ".join(app.name for app in self.apps or []) or "none"
        raise KeyError(f"scenario {self.scenario_id!r} has no app {name!r} (apps: {names})")

    def get_typed_app(self, app_type: type[AppT], name: str | None = None) -> AppT:
        """The app of class ``app_type`` (and name ``name`` if given)."""
        for app in self.apps or []:
            if isinstance(app, app_type) and (name is None or app.name == name):
                return app
        raise KeyError(
            f"scenario {self.scenario_id!r} has no app of type {app_type.__name__}"
            + (f" named {name!r}" if name is not None else "")
        )

    def get_oracle_events(self) -> list[OracleEvent]:
        """The scenario's oracle events (the expected agent actions)."""
        return [event for event in self.events if isinstance(event, OracleEvent)]

    def soft_reset(self) -> None:
        """Reset every app's state and seed; keep apps and events."""
        for app in self.apps or []:
            app.reset()
