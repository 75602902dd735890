"""`EpisodeRestoring`: an episode written whole — a record saved, or one exported elsewhere.

The log, both streams and the index entries are written in one transaction, replacing
the stored episode only when asked to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sotopia_are.record import EpisodeRecord
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.storage.episode_layout import episode_log_of
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.errors import EpisodeExistsError
from sotopia_are.storage.events import event_entry
from sotopia_are.storage.keys import episode_calls_key, episode_events_key
from sotopia_are.storage.store.client import StoreClient
from sotopia_are.storage.store.entries import CallData, call_entries, read_episode
from sotopia_are.storage.store.index import check_index, reindex, write_hash

__all__ = ["EpisodeRestoring"]


class EpisodeRestoring(StoreClient):
    """Whole episodes written at once."""

    def save_record(self, record: EpisodeRecord, *, replace: bool = False) -> EpisodeRecord:
        """Write ``record`` whole, in one transaction; :class:`EpisodeExistsError` (nothing
        written) if its id is stored, unless ``replace``. ``load`` then gives it back."""
        self.restore_episode(
            episode_log_of(record),
            list(record.events),
            record.calls,
            replace=replace,
        )
        return record

    def restore_episode(
        self,
        episode: EpisodeLog,
        events: Sequence[ExportedCompletedEvent | CompletedEvent],
        calls: Sequence[CallData] = (),
        *,
        replace: bool = False,
    ) -> EpisodeLog:
        """Write a whole episode (as exported elsewhere) in one transaction; ``event_count``
        is set from ``events``.

        An episode with its pk is an :class:`EpisodeExistsError` (nothing written) unless
        ``replace``, which drops it, its events and calls first.
        """
        key = episode.redis_key(episode.pk)
        restored = episode.replace(event_count=len(events))
        event_entries = [event_entry(event) for event in events]
        call_payloads = call_entries(calls)

        def write(pipe: Any) -> EpisodeLog:
            old = read_episode(pipe, episode.pk)
            if old is not None and not replace:
                raise EpisodeExistsError(
                    f"episode {episode.pk} already exists in {self.location} "
                    f"({old.status.value}); nothing was written"
                )
            check_index(pipe, [(old, restored)])
            pipe.multi()
            pipe.delete(
                key,
                episode_events_key(episode.pk),
                episode_calls_key(episode.pk),
            )
            write_hash(pipe, restored)
            for entry in event_entries:
                pipe.xadd(episode_events_key(episode.pk), entry)
            for call_entry in call_payloads:
                pipe.xadd(episode_calls_key(episode.pk), call_entry)
            reindex(pipe, old, restored)
            return restored

        return self._watched([key], write)
