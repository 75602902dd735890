"""ARE scenario files (``ExportedTrace`` JSON): load one with the Python files its apps
live in, or run it to its end in oracle mode on a virtual clock.

Every problem with the file or with an app source is one :class:`ScenarioLoadError`
whose message names the file (or ``--apps`` source) and, where there is one, the way on.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from sotopia_are.simulation.data_handler.errors import ScenarioFormatError
from sotopia_are.simulation.data_handler.loading import AppSourceError, import_scenario
from sotopia_are.simulation.environment import (
    Environment,
    EnvironmentState,
    run_in_oracle_mode,
)
from sotopia_are.simulation.scenarios.scenario_imported_from_json import (
    ImportReport,
    ScenarioImportedFromJson,
)
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import EpisodeSpec

from .errors import ScenarioLoadError

__all__ = ["LoadedScenario", "ScenarioLoadError", "ScenarioRun", "load_scenario", "run_scenario"]


@dataclass(frozen=True)
class LoadedScenario:
    """A scenario file imported: the scenario, ready to run, and its completed events."""

    scenario: ScenarioImportedFromJson
    completed_events: tuple[CompletedEvent, ...]

    @property
    def report(self) -> ImportReport:
        """What the import left out or changed (``summary()`` is "" if nothing)."""
        return self.scenario.import_report or ImportReport()


@dataclass(frozen=True)
class ScenarioRun:
    """A scenario run in oracle mode: ``environment`` holds the run (its event log)."""

    loaded: LoadedScenario
    environment: Environment

    @property
    def events(self) -> list[CompletedEvent]:
        """The events that completed, in order."""
        return self.environment.event_log.list_view()

    @property
    def failure(self) -> str | None:
        """Why the run failed (``"the run failed: …"``), or None if it did not."""
        if self.environment.state is not EnvironmentState.FAILED:
            return None
        if self.environment.exception is None:
            return "the run failed (a validation failed)"
        return f"the run failed: {self.environment.exception}"


def load_scenario(
    path: str | os.PathLike[str],
    *,
    apps: Sequence[str] | None = None,
    skip_apps: Sequence[str] | None = None,
    skip_unknown_apps: bool = False,
    lenient: bool = False,
) -> LoadedScenario:
    """Import the scenario file at ``path``. ``apps``: Python files or modules whose App
    classes the file names by class name; ``skip_apps``: apps to leave out with their
    events; ``skip_unknown_apps``: leave out apps whose classes are not available;
    ``lenient``: drop events calling an app the file does not list instead of refusing it.
    What was left out is on ``report``. :class:`ScenarioLoadError` otherwise."""
    text = _read(Path(path))
    try:
        scenario, completed = import_scenario(
            text,
            apps=apps or (),
            apps_to_skip=skip_apps,
            skip_unknown_apps=skip_unknown_apps,
            lenient=lenient,
        )
    except AppSourceError as error:
        raise ScenarioLoadError(f"--apps {error}") from error
    except ScenarioFormatError as error:
        raise ScenarioLoadError(f"{path}: {error}{_hint(error, text)}") from error
    return LoadedScenario(scenario, tuple(completed))


def run_scenario(
    path: str | os.PathLike[str],
    *,
    apps: Sequence[str] | None = None,
    skip_apps: Sequence[str] | None = None,
    skip_unknown_apps: bool = False,
    lenient: bool = False,
) -> ScenarioRun:
    """Load the scenario file at ``path`` (see :func:`load_scenario`, whose errors it
    raises) and run it to its end in oracle mode. A run that failed is returned, with
    ``failure`` saying why."""
    loaded = load_scenario(
        path, apps=apps, skip_apps=skip_apps, skip_unknown_apps=skip_unknown_apps, lenient=lenient
    )
    return ScenarioRun(loaded, run_in_oracle_mode(loaded.scenario))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise ScenarioLoadError(f"{path}: no such file") from error
    except OSError as error:
        raise ScenarioLoadError(f"cannot read {path}: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise ScenarioLoadError(
            f"{path} is not UTF-8 text: {error.reason} at byte {error.start}"
        ) from error


def _hint(error: ScenarioFormatError, text: str) -> str:
    """How to get past ``error`` ("\\nhint: …"), or "" if there is nothing to say."""
    if "unknown app classes" in error.problem:
        return "\nhint: load them with --apps FILE, or use --skip-app / --skip-unknown-apps"
    if "in this scenario's apps" in error.problem:
        return "\nhint: leave out that app's events with --skip-app NAME or --lenient"
    if _is_episode_spec(text):
        return (
            "\nhint: this file looks like an episode spec, not ARE scenario JSON: run it "
            "with 'sotopia-are run FILE' (or 'sotopia-are batch FILE')"
        )
    return ""


def _is_episode_spec(text: str) -> bool:
    """Whether ``text`` is a valid social episode spec (``run``'s input)."""
    try:
        EpisodeSpec.model_validate_json(text)
    except ValidationError:
        return False
    return True
