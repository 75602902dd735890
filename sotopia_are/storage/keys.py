"""The Redis key layout, in one place.

Records are redis-om hashes at ``sotopia_are:<Model>:<pk>`` (what ``HashModel.save``
writes). Next to them the store keeps its own small index keys, so listing and filtering
need no RediSearch, and per-episode keys for what an episode produces as it runs.
"""

from __future__ import annotations

__all__ = [
    "EPISODES_BY_TIME",
    "EXPORTED_FIELD",
    "KEY_PREFIX",
    "SUMMARY_FIELD",
    "episode_calls_key",
    "episode_events_key",
    "episode_index_key",
]

KEY_PREFIX = "sotopia_are"
"""redis-om's ``global_key_prefix`` for every model, and the prefix of every other key."""

EPISODES_BY_TIME = f"{KEY_PREFIX}:index:episode:created"
"""Sorted set: every episode id, scored by its creation time."""


SUMMARY_FIELD = "listed_summary"
"""The field of an episode's hash, beside the record's own, holding what a listing shows of
it (``episode_layout.listing_of``, as JSON), written with the record in the same
transaction. An episode written before it existed lacks it (listing reads the whole
record then, and adds it); any whole rewrite of the record drops it with the rest, so it
is never older than the record it sits in."""


EXPORTED_FIELD = "exported_record"
"""The field of a finished episode's hash, beside the record's own, holding the rest of its
export line (its record's JSON apart from the events and calls, which the streams hold in
that form), as ``exported.exported_text`` writes it, with the record in the same
transaction; exporting joins them instead of rebuilding the record. Like
:data:`SUMMARY_FIELD`, any whole rewrite of the record drops it with the rest, and it is
used only while the record's fields are those it was computed from."""


def episode_index_key(field: str, value: str) -> str:
    """Set of the ids of the episodes whose ``field`` (tag, scenario, model, agent, status)
    is, or for lists contains, ``value``."""
    return f"{KEY_PREFIX}:index:episode:{field}:{value}"


def episode_events_key(episode_id: str) -> str:
    """Stream of the episode's completed events, one entry each, in completion order."""
    return f"{KEY_PREFIX}:episode:{episode_id}:events"


def episode_calls_key(episode_id: str) -> str:
    """Stream of the episode's accounted model calls (agents' and evaluator's)."""
    return f"{KEY_PREFIX}:episode:{episode_id}:calls"
