"""`EpisodeStatus`: where an episode stands — the one status the runner, the store, the
record and the command line all use."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["EpisodeStatus"]


class EpisodeStatus(StrEnum):
    """Where an episode stands.

    ``running`` while it runs (or until a crash is noticed); ``complete`` when a
    termination rule ended it; ``failed`` when an agent raised or chose an action it may
    not take; ``incomplete`` when it was interrupted (a crash, a lost server, a cancelled
    batch). A finished run is ``complete`` or ``failed``; only ``complete`` episodes are
    skipped on resume.
    """

    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"
    INCOMPLETE = "incomplete"
