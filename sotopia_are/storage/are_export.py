"""A stored episode as ARE scenario JSON, built from its stored spec and event stream.

The result is what ``sotopia_are.social.export_episode`` writes for the live run (same
bytes with the same ``annotation_date``): the scenario rebuilt from the spec (its
``ConversationApp`` and scheduled ENV events derive deterministically from it), the
stored completed events, and the spec under ``metadata.runner_config``. So a stored
episode, even an incomplete one, exports, and imports back with ``import_episode``.
"""

from __future__ import annotations

import json

from sotopia_are.simulation.data_handler.exporter import ExportOptions, JsonScenarioExporter
from sotopia_are.simulation.data_handler.models import ExportedTrace
from sotopia_are.simulation.environment import Environment, EnvironmentConfig
from sotopia_are.social import ConversationApp, EpisodeScenario, EpisodeSpec, ImportedEpisode
from sotopia_are.social import import_episode as import_episode_json
from sotopia_are.storage.errors import StorageError
from sotopia_are.storage.store import EpisodeStore

__all__ = ["episode_trace", "export_episode_json", "load_episode"]

# Where social.export_episode puts the spec; an imported file needs it to replay.
_SPEC_KEY = "episode_spec"


def episode_trace(
    store: EpisodeStore, episode_id: str, *, annotation_date: float = 0.0
) -> ExportedTrace:
    """The stored episode as an ``ExportedTrace``; :class:`StorageError` without a spec.

    ``annotation_date`` defaults to 0, as in ``export_episode``, so exports are stable.
    """
    episode = store.get_episode(episode_id)
    if episode.spec is None:
        raise StorageError(
            f"episode {episode_id} has no spec (it was not recorded from the social runner), "
            "so its scenario cannot be rebuilt for ARE JSON"
        )
    spec = EpisodeSpec.model_validate(episode.spec)
    scenario = EpisodeScenario(spec)
    scenario.initialize()
    app = scenario.conversation
    initial = ConversationApp(spec.agent_names, name=app.name)
    trace = JsonScenarioExporter().to_trace(
        Environment(EnvironmentConfig(start_time=0, duration=None, queue_based_loop=True)),
        scenario,
        spec.episode_id,
        ExportOptions(
            runner_config={_SPEC_KEY: spec.model_dump(mode="json")},
            apps_state={
                app.name: {
                    "class_name": type(app).__name__,
                    "serialized_state": json.dumps(initial.get_state()),
                }
            },
            completed_events=[],
            annotation_date=annotation_date,
        ),
    )
    return trace.model_copy(update={"completed_events": store.read_events(episode_id)})


def export_episode_json(
    store: EpisodeStore,
    episode_id: str,
    *,
    indent: int | None = None,
    annotation_date: float = 0.0,
) -> str:
    """:func:`episode_trace` as JSON text."""
    trace = episode_trace(store, episode_id, annotation_date=annotation_date)
    return trace.model_dump_json(indent=indent)


def load_episode(store: EpisodeStore, episode_id: str) -> ImportedEpisode:
    """The stored episode imported into the kernel: spec, scenario and completed events
    (what rendering a transcript or an agent's view, or re-evaluating, starts from)."""
    return import_episode_json(export_episode_json(store, episode_id))
