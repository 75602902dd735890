"""A stored episode as ARE scenario JSON: its record's ``trace()``.

The result is what ``sotopia_are.social.export_episode`` writes for the live run (same
bytes with the same ``annotation_date``), plus the stored status under
``metadata.runner_config`` (:data:`STATUS_KEY`), so an unfinished episode does not come
back as a complete one; a file without it (as ``export_episode`` writes for a live run)
is taken as complete. Any stored episode exports, even an incomplete one, and imports
back with ``import_episode``.
"""

from __future__ import annotations

from sotopia_are.record import STATUS_KEY
from sotopia_are.simulation.data_handler.models import ExportedTrace
from sotopia_are.social import EpisodeStatus, ImportedEpisode
from sotopia_are.social import import_episode as import_episode_json
from sotopia_are.storage.errors import StorageError
from sotopia_are.storage.store import EpisodeStore

__all__ = ["STATUS_KEY", "episode_status", "episode_trace", "export_episode_json", "load_episode"]


def episode_trace(
    store: EpisodeStore, episode_id: str, *, annotation_date: float = 0.0
) -> ExportedTrace:
    """The stored episode as an ``ExportedTrace``; :class:`StorageError` without a spec.

    ``annotation_date`` defaults to 0, as in ``export_episode``, so exports are stable.
    """
    if store.get_episode(episode_id).spec is None:
        raise StorageError(
            f"episode {episode_id} has no spec (it was not recorded from the social runner), "
            "so its scenario cannot be rebuilt for ARE JSON"
        )
    return store.load(episode_id).trace(annotation_date=annotation_date)


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
    """The stored episode imported into the kernel: spec, scenario and completed events."""
    return import_episode_json(export_episode_json(store, episode_id))
