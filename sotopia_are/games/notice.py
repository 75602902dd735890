"""`Notice`: something the game tells its players — an ENV event once it is played."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Notice"]


@dataclass(frozen=True, slots=True)
class Notice:
    """``content`` told to ``perceivers`` (None: everyone). With ``eliminated`` set it is
    that player's elimination (told to everyone): the runner plays it as
    ``ConversationApp.eliminate``, any other notice as ``ConversationApp.announce``."""

    content: str
    perceivers: tuple[str, ...] | None = None
    eliminated: str | None = None
