"""A stored episode as ARE scenario JSON, built from its stored spec and event stream.

The result is what ``sotopia_are.social.export_episode`` writes for the live run (same
bytes with the same ``annotation_date``): the scenario rebuilt from the spec (its
``ConversationApp`` and scheduled ENV events derive deterministically from it), the
stored completed events, and the spec under ``metadata.runner_config``. So a stored
episode, even an incomplete one, exports, and imports back with ``import_episode``.
"""

from __future__ import annotations

from sotopia_are.simulation.data_handler.models import ExportedTrace
from sotopia_are.social import EpisodeSpec, ImportedEpisode
from sotopia_are.social import episode_trace as social_episode_trace
from sotopia_are.social import import_episode as import_episode_json
from sotopia_are.storage.errors import StorageError
from sotopia_are.storage.store import EpisodeStore

__all__ = ["episode_trace", "export_episode_json", "load_episode"]


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
