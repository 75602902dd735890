"""What the episode runner hands an agent each turn, and what it expects back.

`social` never imports `agents`: any object with a ``name`` and an async ``act`` is an
agent. Everything in an :class:`AgentTurn` is derived from the environment's event log
through the visibility function, so an agent can only ever see what it may see.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from sotopia_are.llm import LLMCall
from sotopia_are.messages import AgentAction, Observation, ScriptBackground
from sotopia_are.messages.action import ActionType

__all__ = ["AgentTurn", "CallRecord", "SocialAgent"]


@dataclass(frozen=True)
class AgentTurn:
    """One agent's view at the moment it must act.

    ``background`` shows the agent's own goal (the others' only in omniscient episodes);
    ``observation.last_turn`` is what the agent newly perceived since it last acted;
    ``transcript`` is the whole history it may see, rendered as Sotopia renders it.
    """

    agent_name: str
    turn_number: int
    participants: tuple[str, ...]
    background: ScriptBackground
    observation: Observation
    transcript: str
    available_actions: tuple[ActionType, ...]


CallRecord = LLMCall
"""An accounted model call: the LLM layer's ``LLMCall`` (social reads its value types)."""


@runtime_checkable
class SocialAgent(Protocol):
    """An episode participant: given its view of the turn, it chooses one action."""

    @property
    def name(self) -> str: ...

    async def act(self, turn: AgentTurn) -> AgentAction: ...

    def call_records(self) -> Sequence[CallRecord]:
        """The model calls this agent made so far (empty for agents without a model)."""
        ...
