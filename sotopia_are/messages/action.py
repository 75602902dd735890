"""`AgentAction`: one thing an agent does in a turn, public or private to some participants."""

from collections.abc import Sequence
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from .message import Message

__all__ = ["ActionType", "AgentAction", "validate_recipients"]

ActionType = Literal["none", "speak", "non-verbal communication", "action", "leave"]


def validate_recipients(to: Sequence[str], agent_names: Sequence[str], sender: str) -> list[str]:
    """Return `to` as a list if every recipient is a participant other than `sender`.

    Raises `ValueError` naming the allowed recipients otherwise.
    """
    allowed = [name for name in agent_names if name != sender]
    for recipient in to:
        if recipient == sender:
            raise ValueError(
                f"{sender!r} cannot send a private message to themselves; "
                f"allowed recipients: {allowed}"
            )
        if recipient not in allowed:
            raise ValueError(
                f"unknown recipient {recipient!r} of a private message from {sender!r}; "
                f"allowed recipients: {allowed}"
            )
    return list(to)


class AgentAction(Message):
    """An agent's action; with `to` set it is private to the sender and those recipients.

    Recipients are checked when the validation context carries the participants and the
    sender: ``AgentAction.model_validate(data, context={"agent_names": [...], "sender": s})``.
    """

    action_type: ActionType = Field(
        description="whether to speak at this turn or choose to not do anything"
    )
    argument: str = Field(
        description=(
            "the utterance if choose to speak, the expression or gesture if choose non-verbal "
            "communication, or the physical action if choose action"
        )
    )
    to: list[str] | None = Field(
        default=None,
        description="recipients of a private action; None or empty means visible to everyone",
    )

    @field_validator("to")
    @classmethod
    def _check_recipients(cls, to: list[str] | None, info: ValidationInfo) -> list[str] | None:
        # An empty list and None mean the same thing (public); keep one spelling so equal
        # actions compare equal.
        if not to:
            return None
        context = info.context
        if isinstance(context, dict) and "agent_names" in context and "sender" in context:
            return validate_recipients(to, context["agent_names"], context["sender"])
        return to

    def to_natural_language(self) -> str:
        prefix = f"[private to {self.to!r}] " if self.to else ""
        match self.action_type:
            case "none":
                text = "did nothing"
            case "speak":
                text = f'said: "{self.argument}"'
            case "non-verbal communication" | "action":
                text = f"[{self.action_type}] {self.argument}"
            case "leave":
                text = "left the conversation"
        return prefix + text
