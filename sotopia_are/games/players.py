"""Players without a model, for tests and benchmarks: scripted and random legal players.

Both keep every :class:`AgentTurn` they are shown (``turns``), so a test can check what a
player was told.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from sotopia_are.agents import ScriptExhaustedError
from sotopia_are.messages import GameMove
from sotopia_are.simulation.apps.app import derive_seed
from sotopia_are.social import AgentTurn, CallRecord

__all__ = ["RandomPlayer", "ScriptedPlayer"]


class ScriptedPlayer:
    """Plays ``moves`` in order, one per ask (a refused move counts: the next ask gets
    the next move), or, given a function, ``moves(turn)`` each time. Running out of
    moves raises :class:`~sotopia_are.agents.ScriptExhaustedError` (the game fails)."""

    def __init__(
        self, name: str, moves: Sequence[GameMove] | Callable[[AgentTurn], GameMove]
    ) -> None:
        self._name = name
        self._moves = moves if callable(moves) else list(moves)
        self.turns: list[AgentTurn] = []

    @property
    def name(self) -> str:
        return self._name

    async def act(self, turn: AgentTurn) -> GameMove:
        """The next scripted move."""
        self.turns.append(turn)
        if callable(self._moves):
            return self._moves(turn)
        if not self._moves:
            raise ScriptExhaustedError(
                f"{self._name} has no scripted move left for turn {turn.turn_number}"
            )
        return self._moves.pop(0)

    def call_records(self) -> Sequence[CallRecord]:
        return ()


class RandomPlayer:
    """Plays a legal move drawn uniformly: a move among ``turn.moves``, then a target
    among its targets or an amount within its bounds; speech is a short line unique to
    the player and the moment. Draws from ``derive_seed(seed, f"player:{name}")``, so the
    same seed plays the same game."""

    def __init__(self, name: str, seed: int = 0) -> None:
        self._name = name
        self._random = random.Random(derive_seed(seed, f"player:{name}"))
        self.turns: list[AgentTurn] = []

    @property
    def name(self) -> str:
        return self._name

    async def act(self, turn: AgentTurn) -> GameMove:
        """A random legal move; ValueError if ``turn`` offers none (not a game turn)."""
        self.turns.append(turn)
        if not turn.moves:
            raise ValueError(f"{self._name} was offered no move in turn {turn.turn_number}")
        option = self._random.choice(turn.moves)
        if option.kind == "target":
            return GameMove(move=option.name, target=self._random.choice(option.targets))
        if option.kind == "offer":
            amount = self._random.randint(option.amount_min, option.amount_max)
            return GameMove(move=option.name, amount=amount)
        if option.kind == "speak":
            speech = f"{self._name} thinks aloud in turn {turn.turn_number} ({len(self.turns)})."
            return GameMove(move=option.name, argument=speech)
        return GameMove(move=option.name)

    def call_records(self) -> Sequence[CallRecord]:
        return ()
