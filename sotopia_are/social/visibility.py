"""Who may see what: the one visibility function of the design (rule 4).

An action is visible to a viewer iff it is public (``to`` empty or None), the viewer sent
it, or the viewer is one of its recipients. Every observation, prompt and per-agent
transcript in :mod:`sotopia_are.social` is filtered through :func:`is_visible`; the
evaluator-facing transcript is omniscient by design and does not filter.
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["is_visible"]


def is_visible(viewer: str, sender: str, to: Collection[str] | None) -> bool:
    """Whether ``viewer`` may perceive something ``sender`` did for the audience ``to``."""
    return not to or viewer == sender or viewer in to
