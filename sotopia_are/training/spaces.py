"""The gymnasium spaces of :class:`~sotopia_are.training.ParallelSocialEnv`, and reading
an action in any of the forms the env takes.

An observation is a ``Dict`` of texts (the agent's background, its transcript, what it
newly perceived), the turn number and a 0/1 mask of the available action types. An action
is a ``Dict`` of an action-type index, the argument text and a 0/1 mask of private
recipients — or an :class:`AgentAction`, or its JSON text. These are a conversation's
spaces; a game's (PettingZoo action masks over a table of moves) are in
:mod:`~sotopia_are.training.game_spaces`.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from sotopia_are.messages import AgentAction

__all__ = [
    "MAX_ARGUMENT_LENGTH",
    "MAX_OBSERVATION_LENGTH",
    "AnyText",
    "action_of",
    "action_space_for",
    "observation_space_for",
]

MAX_ARGUMENT_LENGTH = 4_000
"""The longest argument an action may have (about a thousand tokens of speech)."""

MAX_OBSERVATION_LENGTH = 1_000_000
"""The longest text of an observation: far beyond any model's context."""

_SAMPLED = string.ascii_letters + string.digits + " .,!?'"


class AnyText(spaces.Text):
    """Text of any characters, ``min_length`` to ``max_length`` long. gymnasium's
    ``Text`` admits only its sampling charset; speech is any Unicode. Samples are drawn
    from letters, digits, space and a little punctuation."""

    def __init__(self, max_length: int, *, min_length: int = 0) -> None:
        super().__init__(max_length, min_length=min_length, charset=_SAMPLED)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


def observation_space_for(action_types: Sequence[str], max_turns: int) -> spaces.Dict:
    """One agent's observation: ``background``, ``transcript``, ``last_turn`` (texts),
    ``turn_number`` and ``available_actions`` (1 for each type in ``action_types`` the agent
    may take now; all 0 when it is not its turn)."""
    return spaces.Dict(
        {
            "background": AnyText(MAX_OBSERVATION_LENGTH),
            "transcript": AnyText(MAX_OBSERVATION_LENGTH),
            "last_turn": AnyText(MAX_OBSERVATION_LENGTH),
            "turn_number": spaces.Discrete(max_turns + 1),
            "available_actions": spaces.MultiBinary(len(action_types)),
        }
    )


def action_space_for(action_types: Sequence[str], recipients: Sequence[str]) -> spaces.Dict:
    """One agent's action: ``action_type`` (an index into ``action_types``), ``argument``
    and ``to`` (1 for each of ``recipients`` the action is private to; all 0: public)."""
    return spaces.Dict(
        {
            "action_type": spaces.Discrete(len(action_types)),
            "argument": AnyText(MAX_ARGUMENT_LENGTH),
            "to": spaces.MultiBinary(len(recipients)),
        }
    )


def action_of(
    value: object,
    *,
    agent: str,
    participants: Sequence[str],
    action_types: Sequence[str],
) -> AgentAction:
    """``agent``'s action from ``value``: an :class:`AgentAction`, its JSON text, or a dict
    in the action space's form (``action_type`` an index or a name, ``to`` a 0/1 mask over
    the other participants in order, or their names). ``ValueError`` naming what is wrong:
    an action type not in ``action_types``, an unknown recipient, a malformed value."""
    context = {"agent_names": list(participants), "sender": agent}
    if isinstance(value, AgentAction):
        action = AgentAction.model_validate(value.model_dump(), context=context)
    elif isinstance(value, str | bytes):
        action = AgentAction.model_validate_json(value, context=context)
    elif isinstance(value, Mapping):
        action = AgentAction.model_validate(
            _from_space(value, agent, participants, action_types), context=context
        )
    else:
        raise ValueError(
            f"{agent}'s action is a {type(value).__name__}; give an AgentAction, its JSON "
            "text or a dict of the action space"
        )
    if action.action_type not in action_types:
        raise ValueError(
            f"{agent} chose {action.action_type!r}, which is not available "
            f"(available: {list(action_types)})"
        )
    return action


def _from_space(
    value: Mapping[str, Any],
    agent: str,
    participants: Sequence[str],
    action_types: Sequence[str],
) -> dict[str, Any]:
    kind = value.get("action_type")
    if isinstance(kind, int | np.integer):
        if not 0 <= int(kind) < len(action_types):
            raise ValueError(
                f"{agent}'s action_type index {int(kind)} is not in 0..{len(action_types) - 1}"
            )
        kind = action_types[int(kind)]
    to = value.get("to")
    if isinstance(to, np.ndarray) or (
        isinstance(to, Sequence) and not isinstance(to, str) and to and _is_mask(to)
    ):
        others = [name for name in participants if name != agent]
        mask = [int(v) for v in to]
        if len(mask) != len(others):
            raise ValueError(
                f"{agent}'s recipient mask has {len(mask)} entries; it needs one for each "
                f"of {others}"
            )
        to = [name for name, chosen in zip(others, mask, strict=True) if chosen]
    return {"action_type": kind, "argument": value.get("argument", ""), "to": to or None}


def _is_mask(values: Sequence[Any]) -> bool:
    """Whether ``values`` are 0/1 flags rather than recipient names."""
    return not any(isinstance(v, str) for v in values)
