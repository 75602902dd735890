"""Episodes as ARE scenario JSON (``ExportedTrace``), and back.

The file holds the episode's scenario (the :class:`ConversationApp` in its initial state
and the scheduled ENV events), the completed events of the run, and the spec under
``metadata.runner_config["episode_spec"]``, so an imported episode can be replayed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sotopia_are.simulation.data_handler.errors import ScenarioFormatError
from sotopia_are.simulation.data_handler.exporter import JsonScenarioExporter
from sotopia_are.simulation.data_handler.importer import JsonScenarioImporter
from sotopia_are.simulation.scenarios.scenario_imported_from_json import (
    ScenarioImportedFromJson,
)
from sotopia_are.simulation.types import CompletedEvent

from .conversation_app import ConversationApp
from .result import EpisodeResult
from .spec import EpisodeSpec

__all__ = ["ImportedEpisode", "export_episode", "import_episode"]

SPEC_KEY = "episode_spec"


def export_episode(
    result: EpisodeResult, *, indent: int | None = None, annotation_date: float = 0.0
) -> str:
    """``result`` as ARE scenario JSON.

    ``annotation_date`` defaults to 0 (not the wall clock) so that the same run always
    exports to the same bytes.
    """
    app = result.scenario.conversation
    initial = ConversationApp(result.spec.agent_names, name=app.name)
    return JsonScenarioExporter().export_to_json(
        result.environment,
        result.scenario,
        result.episode_id,
        runner_config={SPEC_KEY: result.spec.model_dump(mode="json")},
        indent=indent,
        apps_state={
            app.name: {
                "class_name": type(app).__name__,
                "serialized_state": json.dumps(initial.get_state()),
            }
        },
        completed_events=result.events,
        annotation_date=annotation_date,
    )


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
