"""A stored episode as ARE scenario JSON: its record's ``trace()``.

The result is what ``sotopia_are.social.export_episode`` writes for the live run (same
bytes with the same ``annotation_date``), plus the stored status under
``metadata.runner_config`` (:data:`~sotopia_are.record.STATUS_KEY`), so an unfinished
episode does not come back as a complete one, and its verdicts
(:data:`~sotopia_are.record.VERDICTS_KEY`) if it was rated. Any stored episode exports,
even an incomplete one, and imports back (``sotopia_are.record.record_from_are_json``).
"""

from __future__ import annotations

from sotopia_are.storage.errors import StorageError
from sotopia_are.storage.store import EpisodeStore

__all__ = ["export_episode_json"]


def export_episode_json(
    store: EpisodeStore,
    episode_id: str,
    *,
    indent: int | None = None,
    annotation_date: float = 0.0,
) -> str:
    """The stored episode as ARE JSON text; :class:`StorageError` without a spec.

    ``annotation_date`` defaults to 0, as in ``export_episode``, so exports are stable.
    """
    if store.get_episode(episode_id).spec is None:
        raise StorageError(
            f"episode {episode_id} has no spec (it was not recorded from the social runner), "
            "so its scenario cannot be rebuilt for ARE JSON"
        )
    trace = store.load(episode_id).trace(annotation_date=annotation_date)
    return trace.model_dump_json(indent=indent)
