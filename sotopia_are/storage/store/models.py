"""`StoredModels`: records read and written whole by primary key — profiles, and
episodes' logs.

A write replaces the record whole, in one transaction with the index entries of the
episodes among them; reading one that is not what the store wrote names its key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, TypeVar

from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.errors import RecordNotFoundError
from sotopia_are.storage.keys import episode_calls_key, episode_events_key
from sotopia_are.storage.store.client import StoreClient
from sotopia_are.storage.store.entries import SCAN_BATCH, from_hash, read_episode, read_hash
from sotopia_are.storage.store.index import check_index, reindex, write_hash
from sotopia_are.storage.stored_model import StoredModel

__all__ = ["StoredModels"]

R = TypeVar("R", bound=StoredModel)


class StoredModels(StoreClient):
    """Records of any ``StoredModel`` (profiles, episodes' logs) by pk."""

    def save(self, record: R) -> R:
        """Write ``record`` (replacing any record with its pk); episodes are re-indexed."""
        self.save_all([record])
        return record

    def save_all(self, records: Iterable[StoredModel]) -> int:
        """Write many records in one transaction; returns how many."""
        batch = list(records)
        episodes = [r for r in batch if isinstance(r, EpisodeLog)]
        keys = [r.redis_key(r.pk) for r in episodes]

        def write(pipe: Any) -> int:
            old = {e.pk: read_episode(pipe, e.pk) for e in episodes}
            check_index(pipe, [(old[e.pk], e) for e in episodes])
            pipe.multi()
            for record in batch:
                key = record.redis_key(record.pk)
                pipe.delete(key)
                if isinstance(record, EpisodeLog):
                    write_hash(pipe, record)
                    reindex(pipe, old[record.pk], record)
                else:
                    pipe.hset(key, mapping=record.to_hash())
            return len(batch)

        return self._watched(keys, write)

    def get(self, model: type[R], pk: str) -> R:
        """The record ``pk``; :class:`RecordNotFoundError` if there is none,
        :class:`UnreadableRecordError` naming the key if it holds no valid record."""
        with self._guard():
            fields = read_hash(self.client, model.redis_key(pk))
        if not fields:
            raise RecordNotFoundError(f"no {_kind(model)} {pk!r} in {self.location}")
        return from_hash(model, pk, fields)

    def exists(self, model: type[StoredModel], pk: str) -> bool:
        """Whether the record ``pk`` exists."""
        with self._guard():
            return bool(self.client.exists(model.redis_key(pk)))

    def delete(self, model: type[StoredModel], pk: str) -> bool:
        """Delete the record ``pk`` (for episodes, with its streams and index entries)."""
        if model is EpisodeLog:
            return self.delete_episode(pk)
        with self._guard():
            return bool(self.client.delete(model.redis_key(pk)))

    def all(self, model: type[R]) -> list[R]:
        """Every record of ``model``, sorted by pk (records redis-om's ``save`` wrote too)."""
        with self._guard():
            keys = sorted(
                self.client.scan_iter(match=model.key_pattern(), count=SCAN_BATCH, _type="HASH")
            )
            pipe = self.client.pipeline(transaction=False)
            for key in keys:
                pipe.hgetall(key)
            rows = pipe.execute()
        prefix = model.redis_key("")
        return [
            model.from_hash(key[len(prefix) :], row)
            for key, row in zip(keys, rows, strict=True)
            if row
        ]

    def delete_episode(self, episode_id: str) -> bool:
        """Delete an episode, its streams and its index entries; whether it existed."""
        key = EpisodeLog.redis_key(episode_id)

        def write(pipe: Any) -> bool:
            old = read_episode(pipe, episode_id)
            check_index(pipe, [(old, None)])
            pipe.multi()
            pipe.delete(
                key,
                episode_events_key(episode_id),
                episode_calls_key(episode_id),
            )
            if old is not None:
                reindex(pipe, old, None)
            return old is not None

        return self._watched([key], write)

    def get_episode(self, episode_id: str) -> EpisodeLog:
        """The episode record; :class:`RecordNotFoundError` if there is none,
        :class:`UnreadableRecordError` naming the key if it holds no valid episode."""
        return self.get(EpisodeLog, episode_id)


def _kind(model: type[StoredModel]) -> str:
    """What a user calls a ``model`` record: "episode", "agent profile"…"""
    if model is EpisodeLog:
        return "episode"
    return re.sub(r"(?<!^)(?=[A-Z])", " ", model.__name__).lower()
