"""Episodes as ARE scenario JSON (``ExportedTrace``), and back.

The file holds the episode's scenario (the :class:`ConversationApp` in its initial state
and the scheduled ENV events), the completed events of the run, and the spec under
``metadata.runner_config["episode_spec"]``, so an imported episode can be replayed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sotopia_are.simulation.data_handler.errors import ScenarioFormatError
from sotopia_are.simulation.data_handler.exporter import ExportOptions, JsonScenarioExporter
from sotopia_are.simulation.data_handler.importer import JsonScenarioImporter
from sotopia_are.simulation.data_handler.models import ExportedTrace
from sotopia_are.simulation.environment import Environment, EnvironmentConfig
from sotopia_are.simulation.scenarios.scenario_imported_from_json import (
    ScenarioImportedFromJson,
)
from sotopia_are.simulation.types import CompletedEvent

from .conversation_app import ConversationApp
from .result import EpisodeResult
from .scenario import EpisodeScenario
from .spec import EpisodeSpec

__all__ = ["ImportedEpisode", "episode_trace", "export_episode", "import_episode"]

SPEC_KEY = "episode_spec"


def episode_trace(
    spec: EpisodeSpec,
    *,
    scenario: EpisodeScenario | None = None,
    environment: Environment | None = None,
    completed_events: Sequence[CompletedEvent] = (),
    annotation_date: float = 0.0,
) -> ExportedTrace:
    """The ``ExportedTrace`` of an episode of ``spec``: its scenario (built from ``spec``
    when not given — it derives deterministically from it), the ``ConversationApp`` in its
    initial state, ``completed_events`` and the spec under ``metadata.runner_config``.

    ``annotation_date`` defaults to 0 (not the wall clock) so that the same run always
    exports to the same bytes.
    """
    if scenario is None:
        scenario = EpisodeScenario(spec)
        scenario.initialize()
    if environment is None:
        environment = Environment(
            EnvironmentConfig(start_time=0, duration=None, queue_based_loop=True)
        )
    app = scenario.conversation
    initial = ConversationApp(spec.agent_names, name=app.name)
    return JsonScenarioExporter().to_trace(
        environment,
        scenario,
        spec.episode_id,
        ExportOptions(
            runner_config={SPEC_KEY: spec.model_dump(mode="json")},
            apps_state={
                app.name: {
                    "class_name": type(app).__name__,
                    "serialized_state": json.dumps(initial.get_state()),
                }
            },
            completed_events=list(completed_events),
            annotation_date=annotation_date,
        ),
    )


def export_episode(
    result: EpisodeResult, *, indent: int | None = None, annotation_date: float = 0.0
) -> str:
    """``result`` as ARE scenario JSON (see :func:`episode_trace`)."""
    trace = episode_trace(
        result.spec,
        scenario=result.scenario,
        environment=result.environment,
        completed_events=result.events,
        annotation_date=annotation_date,
    )
    return trace.model_dump_json(indent=indent)


@dataclass(frozen=True)
class ImportedEpisode:
    """An episode read back from scenario JSON: its spec, scenario and completed events."""

    spec: EpisodeSpec
    scenario: ScenarioImportedFromJson
    events: tuple[CompletedEvent, ...]


def import_episode(json_text: str | bytes) -> ImportedEpisode:
    """Read an episode written by :func:`export_episode`.

    :class:`ScenarioFormatError` if the file is not valid scenario JSON or carries no
    episode spec.
    """
    scenario, completed, _ = JsonScenarioImporter().import_from_json(json_text)
    assert scenario.metadata is not None  # always set by the importer
    config = scenario.metadata.runner_config or {}
    if SPEC_KEY not in config:
        raise ScenarioFormatError(
            ["metadata", "runner_config"],
            f"no {SPEC_KEY!r}: this file was not exported from a social episode",
        )
    try:
        spec = EpisodeSpec.model_validate(config[SPEC_KEY])
    except ValueError as error:
        raise ScenarioFormatError(
            ["metadata", "runner_config", SPEC_KEY], f"invalid episode spec: {error}"
        ) from None
    return ImportedEpisode(spec=spec, scenario=scenario, events=tuple(completed))
