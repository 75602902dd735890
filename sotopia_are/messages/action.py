"""`AgentAction`: one thing an agent does in a turn, public or private to some participants."""

from collections.abc import Sequence
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from .message import Message

__all__ = [
    "ActionType",
    "AgentAction",
    "match_participant",
    "reject_duplicate_recipients",
    "validate_recipients",
]

ActionType = Literal["none", "speak", "non-verbal communication", "action", "leave"]

_CONTEXT_KEYS = ("agent_names", "sender")


def reject_duplicate_recipients(to: Sequence[str]) -> None:
    """Raise `ValueError` naming the first recipient that `to` lists more than once."""
    seen: set[str] = set()
    for recipient in to:
        if recipient in seen:
            raise ValueError(f"recipient {recipient!r} is listed twice in {list(to)}")
        seen.add(recipient)


def validate_recipients(to: Sequence[str], agent_names: Sequence[str], sender: str) -> list[str]:
    """Return `to` as a list if its recipients are distinct participants other than `sender`.

    Raises `ValueError` otherwise: when `sender` is not a participant (naming the
    participants), when a recipient is listed twice, or when one is `sender` or unknown
    (naming the allowed recipients).
    """
    if sender not in agent_names:
        raise ValueError(
            f"the sender {sender!r} of a private message is not a participant; "
            f"participants: {list(agent_names)}"
        )
    reject_duplicate_recipients(to)
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


def match_participant(written: str, participants: Sequence[str]) -> str | None:
    """The participant ``written`` names: exactly, else ignoring case and surrounding
    space, else by a unique first name ignoring case; None if no one or several match."""
    if written in participants:
        return written
    wanted = " ".join(written.split()).casefold()
    same = [name for name in participants if name.casefold() == wanted]
    if len(same) == 1:
        return same[0]
    by_first = [name for name in participants if name.split()[0].casefold() == wanted]
    return by_first[0] if len(by_first) == 1 else None


class AgentAction(Message):
    """An agent's action; with `to` set it is private to the sender and those recipients.

    Recipients are never listed twice. They are checked against the participants when the
    validation context carries both the participants and the sender:
    ``AgentAction.model_validate(data, context={"agent_names": [...], "sender": s})``; a
    context with only one of the two keys is an error rather than a silent non-check.

    Arguments are kept in the one form a script can carry, so that rendering an action and
    parsing it back gives the same action: line breaks are ``\\n`` (``\\r\\n`` and ``\\r`` are
    converted), and the description of an ``action`` or ``non-verbal communication`` is a
    single line without surrounding whitespace (surrounding whitespace is dropped; a line
    break inside it is a `ValueError` — multi-line text belongs in speech).
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

    @field_validator("argument")
    @classmethod
    def _scriptable_argument(cls, argument: str, info: ValidationInfo) -> str:
        # A script normalises line ends when it is read, so only `\n` survives a round trip.
        argument = argument.replace("\r\n", "\n").replace("\r", "\n")
        kind = info.data.get("action_type")
        if kind not in ("action", "non-verbal communication"):
            return argument
        # The script form `Name [action] text` ends at the line end and its text is read
        # stripped; keep what that form can carry, and refuse to cut a description in two.
        description = argument.strip()
        if "\n" in description:
            raise ValueError(
                f"the argument of a {kind!r} action must be a single line (put multi-line "
                f"text in speech): {description!r}"
            )
        return description

    @field_validator("to")
    @classmethod
    def _check_recipients(cls, to: list[str] | None, info: ValidationInfo) -> list[str] | None:
        # An empty list and None mean the same thing (public); keep one spelling so equal
        # actions compare equal.
        if not to:
            return None
        context = info.context if isinstance(info.context, dict) else {}
        given = [key for key in _CONTEXT_KEYS if key in context]
        if len(given) == 1:
            missing = next(key for key in _CONTEXT_KEYS if key not in given)
            raise ValueError(
                f"the validation context gives {given[0]!r} but not {missing!r}; recipients "
                "are checked only with both (the participants and the sender)"
            )
        if given:
            return validate_recipients(to, context["agent_names"], context["sender"])
        reject_duplicate_recipients(to)
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
