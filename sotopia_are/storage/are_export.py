"""A stored episode as ARE scenario JSON, built from its stored spec and event stream.

The result is what ``sotopia_are.social.export_episode`` writes for the live run (same
bytes with the same ``annotation_date``): the scenario rebuilt from the spec (its
``ConversationApp`` and scheduled ENV events derive deterministically from it), the
stored completed events, and the spec under ``metadata.runner_config``. So a stored
episode, even an incomplete one, exports, and imports back with ``import_episode``.

``runner_config`` also carries the stored episode's status (:data:`STATUS_KEY`), so an
unfinished episode does not come back as a complete one; a file without it (as
``export_episode`` writes for a live run) is taken as complete.
"""

from __future__ import annotations

from sotopia_are.simulation.data_handler.models import ExportedTrace
from sotopia_are.social import EpisodeSpec, ImportedEpisode
from sotopia_are.social import episode_trace as social_episode_trace
from sotopia_are.social import import_episode as import_episode_json
from sotopia_are.storage.episode_log import EpisodeStatus
from sotopia_are.storage.errors import StorageError
from sotopia_are.storage.store import EpisodeStore

__all__ = ["STATUS_KEY", "episode_status", "episode_trace", "export_episode_json", "load_episode"]

STATUS_KEY = "episode_status"
"""The key of ``metadata.runner_config`` holding the stored episode's status."""


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
    trace = social_episode_trace(spec, annotation_date=annotation_date)
    metadata = trace.metadata.model_copy(
        update={
            "runner_config": {
                **(trace.metadata.runner_config or {}),
                STATUS_KEY: episode.status.value,
            }
        }
    )
    return trace.model_copy(
        update={"completed_events": store.read_events(episode_id), "metadata": metadata}
    )


def episode_status(episode: ImportedEpisode) -> EpisodeStatus:
    """The status an imported ARE episode was exported with (:data:`STATUS_KEY`);
    ``complete`` when the file does not say. ``ValueError`` for an unknown status."""
    config = (episode.scenario.metadata.runner_config if episode.scenario.metadata else None) or {}
    return EpisodeStatus(config.get(STATUS_KEY, EpisodeStatus.COMPLETE.value))


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
