"""What the episode runner hands an agent each turn, and what it expects back.

`social` never imports `agents`: any object with a ``name`` and an async ``act`` is an
agent. Everything in an :class:`AgentTurn` is derived from the environment's event log
through the visibility function, so an agent can only ever see what it may see.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol, runtime_checkable

from sotopia_are.llm import LLMCall
from sotopia_are.llm.valid_parts import of_valid_dataclass
from sotopia_are.messages import AgentAction, GameMove, Observation, ScriptBackground
from sotopia_are.messages.action import ActionType

from .game_rules import ActionKind, Audience

__all__ = ["AgentTurn", "CallRecord", "MoveOption", "SocialAgent"]


@dataclass(frozen=True)
class AgentTurn:
    """One agent's view at the moment it must act.

    ``background`` shows the agent's own goal (the others' only in omniscient episodes);
    ``observation.last_turn`` is what the agent newly perceived since it last acted;
    ``transcript`` is the whole history it may see, rendered as Sotopia renders it.
    In a game, ``moves`` are the moves it may make now (it answers with a
    :class:`~sotopia_are.messages.GameMove` naming one of them) and ``phase`` names the
    phase; in a conversation ``moves`` is empty and it answers with an
    :class:`~sotopia_are.messages.AgentAction` of one of ``available_actions``.
    """

    agent_name: str
    turn_number: int
    participants: tuple[str, ...]
    background: ScriptBackground
    observation: Observation
    transcript: str
    available_actions: tuple[ActionType, ...]
    moves: tuple[MoveOption, ...] = ()
    phase: str = ""


_TURN_FIELDS = tuple(field.name for field in fields(AgentTurn))


def turn_of_fields(values: dict[str, Any]) -> AgentTurn:
    """``AgentTurn(**values)`` for ``values`` that name every field in the class's order,
    defaults included, each of its field's type (the runner's views make every turn so;
    see :func:`~sotopia_are.llm.valid_parts.of_valid_dataclass`)."""
    if tuple(values) != _TURN_FIELDS:
        raise TypeError(f"an AgentTurn is made of the fields {_TURN_FIELDS}, in that order")
    return of_valid_dataclass(AgentTurn, values)


@dataclass(frozen=True)
class MoveOption:
    """One move an agent may make now in a game, with exactly what it may take.

    ``kind`` is the rules' :data:`~sotopia_are.social.game_rules.ActionKind`; ``targets``
    are the eligible participants of a ``target`` move; ``amount_min``/``amount_max``
    bound an offer; ``audience`` says who will see the move.
    """

    name: str
    kind: ActionKind
    description: str = ""
    audience: Audience = "everyone"
    targets: tuple[str, ...] = ()
    amount_min: int = 0
    amount_max: int = 0


CallRecord = LLMCall
"""An accounted model call: the LLM layer's ``LLMCall`` (social reads its value types)."""


@runtime_checkable
class SocialAgent(Protocol):
    """An episode participant: given its view of the turn, it chooses one action."""

    @property
    def name(self) -> str: ...

    async def act(self, turn: AgentTurn) -> AgentAction | GameMove: ...

    def call_records(self) -> Sequence[CallRecord]:
        """The model calls this agent made so far (empty for agents without a model)."""
        ...
