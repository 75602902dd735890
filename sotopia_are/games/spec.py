"""`GameSpec`: an episode spec whose ``game`` is required — what a game file holds.

A game file is an episode spec JSON with a ``"game"`` key (:class:`GameRules`), read with
``GameSpec.model_validate_json(text)``. Everything in :mod:`sotopia_are.games` also takes a
plain :class:`EpisodeSpec` with ``game`` set (that is how a game travels through batches,
records and storage); :func:`rules_of` is where one is told from the other.
"""

from __future__ import annotations

from pydantic import Field

from sotopia_are.social import EpisodeSpec, GameRules

__all__ = ["GameSpec", "rules_of"]


class GameSpec(EpisodeSpec):
    """An :class:`EpisodeSpec` that is a game: ``game`` must be given.

    Example:
        ```python
        spec = GameSpec.model_validate_json(Path("examples/games/werewolf.json").read_text())
        ```
    """

    game: GameRules = Field(description="the rules of the social game")


def rules_of(spec: EpisodeSpec) -> GameRules:
    """``spec``'s game rules; ValueError naming the episode if it is a conversation."""
    if spec.game is None:
        raise ValueError(
            f"episode {spec.episode_id!r} is a conversation, not a game: its spec has no 'game'"
        )
    return spec.game
