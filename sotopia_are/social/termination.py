"""When an episode ends: a small rule protocol, and Sotopia's default rule.

A rule looks at the :class:`EpisodeState` before each turn and returns the reason to stop,
or None. The runner stops at the first rule that gives a reason. Step 6's rule-based
evaluator plugs in here by implementing :class:`TerminationRule`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from sotopia_are.llm.valid_parts import slot_setters
from sotopia_are.messages import AgentAction

from .spec import EpisodeSpec

__all__ = [
    "EpisodeState",
    "MaxTurnsAndStaleRule",
    "TerminationRule",
    "default_rule",
    "first_reason",
    "is_stale",
]


@dataclass(frozen=True, slots=True)
class EpisodeState:
    """The episode between two turns, as read from the log.

    ``turn_number`` is the number of turns played; ``stale_turns`` the number of
    consecutive turns, up to the last one, in which every actor did nothing;
    ``last_turn`` the ``(actor, action)`` pairs of the last turn and ``actions`` those of
    the whole episode so far, oldest first (a read-only view; do not keep it).
    """

    turn_number: int
    participants: tuple[str, ...]
    active: tuple[str, ...]
    stale_turns: int
    last_turn: tuple[tuple[str, AgentAction], ...]
    actions: Sequence[tuple[str, AgentAction]] = ()

    @classmethod
    def after(
        cls,
        turns: Sequence[Sequence[tuple[str, AgentAction]]],
        participants: Sequence[str],
    ) -> EpisodeState:
        """The state after ``turns`` (each the ``(actor, action)`` pairs of one turn,
        oldest first) played by ``participants``: who left, and the stale turns at the
        end, counted as the runner counts them."""
        left = {name for turn in turns for name, action in turn if action.action_type == "leave"}
        stale = 0
        for turn in reversed(turns):
            if not is_stale(turn):
                break
            stale += 1
        return cls(
            turn_number=len(turns),
            participants=tuple(participants),
            active=tuple(name for name in participants if name not in left),
            stale_turns=stale,
            last_turn=tuple(turns[-1]) if turns else (),
            actions=[pair for turn in turns for pair in turn],
        )


# Each field's slot, set through its descriptor (see state_of).
(
    _set_turn_number,
    _set_participants,
    _set_active,
    _set_stale_turns,
    _set_last_turn,
    _set_actions,
) = slot_setters(EpisodeState)
_new = object.__new__


def state_of(
    turn_number: int,
    participants: tuple[str, ...],
    active: tuple[str, ...],
    stale_turns: int,
    last_turn: tuple[tuple[str, AgentAction], ...],
    actions: Sequence[tuple[str, AgentAction]],
) -> EpisodeState:
    """``EpisodeState(turn_number, participants, active, stale_turns, last_turn,
    actions)``, each value of its field's type (the runner makes one before every turn):
    the slots set through their descriptors, not through the frozen class's
    ``object.__setattr__`` by name (a third of the cost)."""
    state = _new(EpisodeState)
    _set_turn_number(state, turn_number)
    _set_participants(state, participants)
    _set_active(state, active)
    _set_stale_turns(state, stale_turns)
    _set_last_turn(state, last_turn)
    _set_actions(state, actions)
    return state


def is_stale(turn: Sequence[tuple[str, AgentAction]]) -> bool:
    """Whether nobody did anything in ``turn`` (its ``(actor, action)`` pairs): the one
    definition of a stale turn."""
    return all(action.action_type == "none" for _name, action in turn)


@runtime_checkable
class TerminationRule(Protocol):
    """Decides whether the episode ends before the next turn."""

    def check(self, state: EpisodeState) -> str | None:
        """The reason to stop now, or None to play on."""
        ...


@dataclass(frozen=True)
class MaxTurnsAndStaleRule:
    """Sotopia's rules: stop after ``max_turn_number`` turns, when fewer than two agents
    remain, or once more than ``max_stale_turn`` consecutive turns passed in which nobody
    did anything (Sotopia's ``stale > max_stale_turn``)."""

    max_turn_number: int = 20
    max_stale_turn: int = 2

    def check(self, state: EpisodeState) -> str | None:
        if len(state.active) < 2:
            left = [name for name in state.participants if name not in state.active]
            return f"fewer than two agents remain ({', '.join(left)} left)"
        if state.turn_number >= self.max_turn_number:
            return f"reached the maximum of {self.max_turn_number} turns"
        if state.stale_turns > self.max_stale_turn:
            return f"nobody did anything for {state.stale_turns} consecutive turns"
        return None


def default_rule(spec: EpisodeSpec) -> MaxTurnsAndStaleRule:
    """The rule of ``spec``'s own limits (``max_turns``, ``max_stale_turns``): the one
    place they become a rule — the runner plays by it unless given others, and a finished
    episode is checked against it when rated."""
    return MaxTurnsAndStaleRule(spec.max_turns, spec.max_stale_turns)


def first_reason(rules: Sequence[TerminationRule], state: EpisodeState) -> str | None:
    """The reason of the first rule that stops the episode, if any."""
    for rule in rules:
        reason = rule.check(state)
        if reason is not None:
            return reason
    return None
