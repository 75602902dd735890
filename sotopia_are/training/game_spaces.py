"""The spaces of :class:`~sotopia_are.training.ParallelSocialEnv` on a game, in PettingZoo's
``action_mask`` convention, and reading a caller's game action.

**The encoding.** A game's actions are one fixed, flat table of :class:`MoveChoice` s —
``env.move_choices``, the same for every agent and every turn, computed from the rules
alone (:func:`move_choices`). For each action of each phase, in the rules' order (an
action named alike in several phases once per kind):

- ``speak``, ``accept``, ``reject``, ``pass``: one choice (the move);
- ``target``: one choice per participant, in ``spec.agent_names`` order (move x target);
- ``offer``: one choice per amount bucket — every integer from ``amount_min`` to
  ``amount_max`` when they are at most :data:`MAX_AMOUNT_CHOICES`, else that many evenly
  spaced integers including both ends (move x amount bucket);
- with a phase of ``order: "bids"``, the bid (``"bid"``, amounts 0 to 10) likewise.

The action space is ``Discrete(len(move_choices))``. An observation is
``{"observation": {...}, "action_mask": int8 array}``; the mask has a 1 exactly at the
choices that are legal moves for that agent now (all 0 when it is not asked), so
``action_space(agent).sample(mask=obs["action_mask"])`` draws a legal choice.

An action is a choice index; or ``{"choice": index, "argument": words}`` (a speak choice
needs its words: an index alone is refused; a target or an offer may carry its stated
reason); or a :class:`~sotopia_are.messages.GameMove` or its JSON text (any legal amount,
not only a bucket's). A move that is not legal now is an :class:`IllegalMoveError` with the
reason the game gives (:func:`~sotopia_are.games.check_move`) — never an abstention.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from pydantic import ValidationError

from sotopia_are import SotopiaAreError
from sotopia_are.games import MAX_ASKS, check_move, rules_of
from sotopia_are.games.play import BID
from sotopia_are.messages import GameMove
from sotopia_are.social import EpisodeSpec, MoveOption
from sotopia_are.social.game_rules import ActionKind

from .spaces import MAX_ARGUMENT_LENGTH, MAX_OBSERVATION_LENGTH, AnyText

__all__ = [
    "MAX_AMOUNT_CHOICES",
    "IllegalMoveError",
    "MoveChoice",
    "action_mask",
    "game_action_space",
    "game_observation_space",
    "legal_moves_text",
    "move_choices",
    "move_of",
    "turn_bound",
]

MAX_AMOUNT_CHOICES = 101
"""The most amount buckets an offer gets in the table (0 to 100 in steps of 1)."""


class IllegalMoveError(SotopiaAreError, ValueError):
    """``agent``'s action is not a legal move now, for ``reason``; nothing was played
    and the agent is still to act."""

    def __init__(self, agent: str, reason: str) -> None:
        super().__init__(f"{agent}'s move was refused: {reason}")
        self.agent = agent
        self.reason = reason


@dataclass(frozen=True, slots=True)
class MoveChoice:
    """One entry of the table: the move ``move`` of ``kind``, with ``target`` (a target
    move) or ``amount`` (an offer) when it takes one."""

    move: str
    kind: ActionKind
    target: str | None = None
    amount: int | None = None

    def legal_in(self, options: Sequence[MoveOption]) -> bool:
        """Whether this choice is one of the moves ``options`` offer."""
        for option in options:
            if option.name != self.move or option.kind != self.kind:
                continue
            if self.kind == "target":
                return self.target in option.targets
            if self.kind == "offer":
                assert self.amount is not None
                return option.amount_min <= self.amount <= option.amount_max
            return True
        return False

    def to_move(self, argument: str = "") -> GameMove:
        """The move this choice makes, with ``argument`` as its words."""
        return GameMove(move=self.move, target=self.target, amount=self.amount, argument=argument)


def move_choices(spec: EpisodeSpec) -> tuple[MoveChoice, ...]:
    """The table of the game of ``spec`` (see the module); ValueError if it is not a game."""
    rules = rules_of(spec)
    kinds: dict[tuple[str, ActionKind], list[int]] = {}
    for phase in rules.phases:
        actions: list[tuple[str, ActionKind, int, int]] = [
            (action.name, action.kind, action.amount_min, action.amount_max)
            for action in phase.actions
        ]
        if phase.order == "bids":
            actions.append((BID.name, BID.kind, BID.amount_min, BID.amount_max))
        for name, kind, low, high in actions:
            amounts = kinds.setdefault((name, kind), [])
            if kind == "offer":
                amounts.extend(a for a in _buckets(low, high) if a not in amounts)
    table: list[MoveChoice] = []
    for (name, kind), amounts in kinds.items():
        if kind == "target":
            table.extend(MoveChoice(name, kind, target=who) for who in spec.agent_names)
        elif kind == "offer":
            table.extend(MoveChoice(name, kind, amount=amount) for amount in sorted(amounts))
        else:
            table.append(MoveChoice(name, kind))
    return tuple(table)


def _buckets(low: int, high: int) -> list[int]:
    if high - low + 1 <= MAX_AMOUNT_CHOICES:
        return list(range(low, high + 1))
    step = (high - low) / (MAX_AMOUNT_CHOICES - 1)
    return sorted({round(low + index * step) for index in range(MAX_AMOUNT_CHOICES)})


def action_mask(choices: Sequence[MoveChoice], options: Sequence[MoveOption]) -> np.ndarray:
    """1 for each of ``choices`` that is one of ``options`` (the legal moves now), else 0."""
    return np.array([int(choice.legal_in(options)) for choice in choices], dtype=np.int8)


def turn_bound(spec: EpisodeSpec) -> int:
    """The most turns a game of ``spec`` can take: per cycle, each phase's rounds times its
    asks per round (each actor in turn; all at once; a bid then the bidder), each asked
    up to :data:`~sotopia_are.games.MAX_ASKS` times."""
    rules = rules_of(spec)
    seats = len(spec.agent_names)
    per_round = {"round-robin": seats, "simultaneous": 1, "bids": 2}
    cycle = sum(phase.rounds * per_round[phase.order] for phase in rules.phases)
    return rules.max_cycles * cycle * MAX_ASKS


def game_observation_space(spec: EpisodeSpec, choices: Sequence[MoveChoice]) -> spaces.Dict:
    """One agent's observation of a game: ``observation`` — ``background``,
    ``transcript``, ``last_turn`` (as in a conversation), ``turn_number``, ``phase`` (the
    phase it is asked in, else empty) and ``legal_moves`` (its legal moves now in words,
    one a line, else empty) — and ``action_mask`` over ``choices``."""
    return spaces.Dict(
        {
            "observation": spaces.Dict(
                {
                    "background": AnyText(MAX_OBSERVATION_LENGTH),
                    "transcript": AnyText(MAX_OBSERVATION_LENGTH),
                    "last_turn": AnyText(MAX_OBSERVATION_LENGTH),
                    "turn_number": spaces.Discrete(turn_bound(spec) + 1),
                    "phase": AnyText(MAX_OBSERVATION_LENGTH),
                    "legal_moves": AnyText(MAX_OBSERVATION_LENGTH),
                }
            ),
            "action_mask": spaces.MultiBinary(len(choices)),
        }
    )


def game_action_space(choices: Sequence[MoveChoice]) -> spaces.Discrete:
    """One agent's action in a game: an index into ``choices``."""
    return spaces.Discrete(len(choices))


def legal_moves_text(options: Sequence[MoveOption]) -> str:
    """``options`` in words, one a line: ``vote (target: Ana, Ben): vote to ...``."""
    lines = []
    for option in options:
        takes = ""
        if option.kind == "target":
            takes = f" (target: {', '.join(option.targets)})"
        elif option.kind == "offer":
            takes = f" (amount: {option.amount_min} to {option.amount_max})"
        elif option.kind == "speak":
            takes = " (words)"
        about = f": {option.description}" if option.description else ""
        lines.append(f"{option.name}{takes}{about}")
    return "\n".join(lines)


def move_of(
    value: object,
    *,
    agent: str,
    choices: Sequence[MoveChoice],
    options: Sequence[MoveOption],
) -> GameMove:
    """``agent``'s move from ``value`` (see the module for the forms). ValueError for a
    malformed value or an index outside the table; :class:`IllegalMoveError` for a move
    that is not one of ``options``."""
    if isinstance(value, GameMove):
        move = value
    elif isinstance(value, str | bytes):
        try:
            move = GameMove.model_validate_json(value)
        except ValidationError as error:
            raise ValueError(f"{agent}'s move is not a GameMove's JSON: {error}") from None
    elif isinstance(value, int | np.integer) and not isinstance(value, bool):
        move = _choice(int(value), agent, choices).to_move()
    elif isinstance(value, Mapping):
        move = _from_mapping(value, agent, choices)
    else:
        raise ValueError(
            f"{agent}'s action is a {type(value).__name__}; give a choice index, "
            '{"choice": index, "argument": words}, a GameMove or its JSON text'
        )
    if (why := check_move(move, options)) is not None:
        raise IllegalMoveError(agent, why)
    return move


def _choice(index: int, agent: str, choices: Sequence[MoveChoice]) -> MoveChoice:
    if not 0 <= index < len(choices):
        raise ValueError(f"{agent}'s choice {index} is not in 0..{len(choices) - 1}")
    return choices[index]


def _from_mapping(value: Mapping[str, Any], agent: str, choices: Sequence[MoveChoice]) -> GameMove:
    unknown = sorted(set(value) - {"choice", "argument"})
    index = value.get("choice")
    if unknown or not isinstance(index, int | np.integer) or isinstance(index, bool):
        raise ValueError(
            f'{agent}\'s action {dict(value)!r} is not {{"choice": index, "argument": words}}'
        )
    argument = value.get("argument", "")
    if not isinstance(argument, str) or len(argument) > MAX_ARGUMENT_LENGTH:
        raise ValueError(
            f"{agent}'s argument must be text of at most {MAX_ARGUMENT_LENGTH} characters"
        )
    return _choice(int(index), agent, choices).to_move(argument)
