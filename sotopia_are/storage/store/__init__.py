"""`EpisodeStore`: profiles and episodes in Redis, on any Redis ≥ 6.2 without modules.

Every write that touches more than one key runs in one MULTI/EXEC transaction (guarded
by WATCH where it depends on what is stored), so a record and its index entries never
disagree and an interrupted write leaves nothing half-written. Listing and filtering
use the store's own index sets (see :mod:`~sotopia_are.storage.keys`), never RediSearch.

An episode's life: :meth:`EpisodeStore.start_episode` (status ``running``),
:meth:`~EpisodeStore.append_event` for each completed event as it happens, then
:meth:`~EpisodeStore.finish_episode` (``complete`` or ``failed``, with usage and the
run's model calls, in one transaction), and later :meth:`~EpisodeStore.add_verdict`
(a judge's verdict, with its calls). A run that dies in between leaves a readable
``running`` episode with the events it had; :meth:`~EpisodeStore.mark_interrupted` turns
such leftovers into ``incomplete`` ones, and :meth:`~EpisodeStore.completed_episode_ids`
tells a resumed batch what to skip.

The store is one class made of its parts, one module each, on one shared connection
(:mod:`.client`), as redis-py builds its client from command mixins:

- :mod:`.models` — records read and written whole by pk (profiles, episodes' logs);
- :mod:`.appends` — events and calls appended to an episode's streams (the hot path);
- :mod:`.reading` — a stored episode read back as its record, its events, its calls;
- :mod:`.listing` — episodes selected by one :class:`EpisodeFilter`;
- :mod:`.restoring` — an episode written whole;
- :mod:`.lifecycle` — start, finish, interruption and verdicts;
- :mod:`.written` — a batch's steps in one round trip, from what the store last wrote;
- :mod:`.index` and :mod:`.entries` — the index keys kept in step, and reading back
  what the store wrote.
"""

from __future__ import annotations

from sotopia_are.storage.store.appends import EpisodeAppends
from sotopia_are.storage.store.client import WRITE_ATTEMPTS
from sotopia_are.storage.store.entries import CALL_FIELD, CallData
from sotopia_are.storage.store.lifecycle import EpisodeLifecycle
from sotopia_are.storage.store.listing import EpisodeFilter, OnUnreadable

__all__ = [
    "CALL_FIELD",
    "WRITE_ATTEMPTS",
    "CallData",
    "EpisodeFilter",
    "EpisodeStore",
    "OnUnreadable",
]


class EpisodeStore(EpisodeLifecycle, EpisodeAppends):
    """Profiles and episodes on one Redis connection; build it with
    :func:`~sotopia_are.storage.connect`.

    ``location`` says where the data is, for messages (never a password).
    Connection failures during any call raise :class:`StorageUnavailableError`.
    """
