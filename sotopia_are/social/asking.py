"""Asking the agents of one turn for their answers, and what an agent that raised did.

Both runners (conversations and games) ask agents the same way: every actor of the turn
at once, each answer kept in the turn's order; an agent that raises is a fault of that
agent, reported with the turn it raised in (never turned into "did nothing").
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sotopia_are.messages import AgentAction, GameMove

from .protocol import AgentTurn, SocialAgent

__all__ = ["AgentFault", "ask_agents"]


@dataclass(frozen=True, slots=True)
class AgentFault:
    """``agent`` failed its turn, for ``reason``."""

    agent: str
    reason: str


async def ask_agents(
    cast: Mapping[str, SocialAgent], turns: Sequence[AgentTurn]
) -> list[AgentAction | GameMove] | AgentFault:
    """Each turn's agent's answer, in ``turns`` order (all asked at once), or the fault of
    the first agent (in ``turns`` order) that raised. What the answers are is the
    caller's to check. A ``BaseException`` that is not an ``Exception`` propagates."""
    if len(turns) == 1:
        # The common case (one actor per turn) without gather's task overhead.
        outcomes: list[AgentAction | GameMove | BaseException] = []
        try:
            outcomes.append(await cast[turns[0].agent_name].act(turns[0]))
        except Exception as error:
            outcomes.append(error)
    else:
        outcomes = await asyncio.gather(
            *(cast[t.agent_name].act(t) for t in turns), return_exceptions=True
        )
    answers: list[AgentAction | GameMove] = []
    for turn, outcome in zip(turns, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            if not isinstance(outcome, Exception):
                raise outcome
            name = turn.agent_name
            return AgentFault(
                name,
                f"{name} raised {type(outcome).__name__} in turn {turn.turn_number}: {outcome}",
            )
        answers.append(outcome)
    return answers
