"""Helpers of the agents tests: hand-built turns as the runner would build them."""

from sotopia_are.messages import Observation, ScriptBackground
from sotopia_are.messages.action import ActionType
from sotopia_are.social.protocol import AgentTurn, MoveOption

MODEL = "openai/test-model"
ALL_ACTIONS: tuple[ActionType, ...] = (
    "none",
    "speak",
    "non-verbal communication",
    "action",
    "leave",
)


def make_turn(
    agent: str,
    background: ScriptBackground,
    *,
    turn_number: int = 1,
    transcript: str = "",
    last_turn: str = "",
    available_actions: tuple[ActionType, ...] = ALL_ACTIONS,
    participants: tuple[str, ...] | None = None,
    moves: tuple[MoveOption, ...] = (),
    phase: str = "",
) -> AgentTurn:
    """An :class:`AgentTurn` as the runner would build it (tests build them by hand)."""
    return AgentTurn(
        agent_name=agent,
        turn_number=turn_number,
        participants=participants or tuple(background.agent_names),
        background=background,
        observation=Observation(
            last_turn=last_turn,
            turn_number=turn_number,
            available_actions=list(available_actions),
        ),
        transcript=transcript,
        available_actions=available_actions,
        moves=moves,
        phase=phase,
    )
