"""`ConversationApp`: the conversation as an ARE app, so every agent action is an event.

Agents act through :meth:`ConversationApp.act` (one completed AGENT/WRITE event per call);
scenario-scheduled ENV events call :meth:`ConversationApp.announce` (something happens
that some or all participants perceive) and :meth:`ConversationApp.deliver_message` (a
message from someone outside the conversation). In a social game, players make moves
through :meth:`ConversationApp.move` (AGENT events) and the rules remove a player with
:meth:`ConversationApp.eliminate` (an ENV event everyone perceives). The app's tool args
are plain JSON values, so its events export to and import from ARE's scenario JSON
unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

from sotopia_are.llm.valid_parts import of_valid_fields
from sotopia_are.messages import AgentAction, GameMove
from sotopia_are.messages.action import ActionType
from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.apps.registry import register_app_class
from sotopia_are.simulation.notification_system import NotificationSystemConfig
from sotopia_are.simulation.types import EventType, OperationType, event_registered

__all__ = ["ENVIRONMENT_SENDER", "NOTIFIED_TOOLS", "ConversationApp"]

ENVIRONMENT_SENDER = "Environment"
"""The sender of :meth:`ConversationApp.announce` events (never a participant's name)."""

NOTIFIED_TOOLS = ("announce", "deliver_message", "eliminate")
"""The ENV tools whose events reach the participants' observations as notifications."""


_ACTION_TYPES: frozenset[str] = frozenset(get_args(ActionType))
_ONE_LINE: tuple[str, ...] = ("action", "non-verbal communication")


def _plain_action(action_type: object, argument: object, to: object) -> AgentAction | None:
    """The :class:`AgentAction` that validating these fields makes (with any
    participants and sender), when they are in the plain form of nearly every action:
    exact strings, one of the action types, an argument without a carriage return, and
    public (``to`` None); else None, for the caller to validate them.

    Validation of such fields changes only the argument of an ``action`` or a
    ``non-verbal communication``, stripped (and refused with a line break left inside:
    None then, so that validation says why). Recipients are checked against the
    participants only when there are some, which a plain action has none of. So the
    action is made of its fields without pydantic (about three quarters of a turn's
    validation), equal to the validated one in every field, type and field set."""
    if (
        to is not None
        or type(action_type) is not str
        or type(argument) is not str
        or action_type not in _ACTION_TYPES
        or "\r" in argument
    ):
        return None
    if action_type in _ONE_LINE:
        argument = argument.strip()
        if "\n" in argument:
            return None
    return of_valid_fields(
        AgentAction, {"action_type": action_type, "argument": argument, "to": None}
    )


@register_app_class
class ConversationApp(App):
    """A conversation among ``participants``; it remembers who has left.

    Constructible without arguments (the scenario importer does that, then
    :meth:`load_state`).
    """

    def __init__(self, participants: Sequence[str] = (), name: str | None = None) -> None:
        super().__init__(name)
        self._set_participants(participants)
        self._validated: tuple[str, str, list[str] | None, AgentAction] | None = None

    def _set_participants(self, participants: Sequence[str]) -> None:
        if len(set(participants)) != len(participants):
            raise ValueError(f"participants must be distinct: {list(participants)}")
        if ENVIRONMENT_SENDER in participants:
            raise ValueError(f"{ENVIRONMENT_SENDER!r} is reserved and cannot be a participant")
        self.participants: tuple[str, ...] = tuple(participants)
        self.left: set[str] = set()

    def notification_config(self) -> NotificationSystemConfig:
        """A notification config under which this app's ENV tools notify the agents."""
        return NotificationSystemConfig(notified_tools={self.name: list(NOTIFIED_TOOLS)})

    def active_participants(self) -> tuple[str, ...]:
        """The participants who have not left, in their original order."""
        if not self.left:  # asked before every turn; nobody has left in most
            return self.participants
        return tuple(name for name in self.participants if name not in self.left)

    @event_registered(operation_type=OperationType.WRITE, event_type=EventType.AGENT)
    def act(
        self,
        sender: str,
        action_type: ActionType,
        argument: str,
        to: list[str] | None = None,
    ) -> None:
        """``sender`` takes one action, private to ``to`` if given.

        ValueError if ``sender`` is not an active participant, ``to`` names someone who is
        not another participant, or the action is not a valid :class:`AgentAction`.
        """
        self._check_active(sender)
        action = _plain_action(action_type, argument, to)
        if action is None:
            action = AgentAction.model_validate(
                {"action_type": action_type, "argument": argument, "to": to},
                context={"agent_names": self.participants, "sender": sender},
            )
        if action.action_type == "leave":
            self.left.add(sender)
        self._validated = (action_type, argument, to, action)

    def take_validated_action(
        self, action_type: str, argument: str, to: list[str] | None
    ) -> AgentAction | None:
        """The action the last :meth:`act` validated, if it was given these arguments; once
        (then None until the next call). The conversation's entry of the call takes it
        rather than validating the same arguments again: validation is a function of them
        (the participants only refuse), so it would make an equal action."""
        kept, self._validated = self._validated, None
        if kept is None or kept[0] != action_type or kept[1] != argument or kept[2] != to:
            return None
        return kept[3]

    @event_registered(operation_type=OperationType.WRITE, event_type=EventType.AGENT)
    def move(
        self,
        sender: str,
        move: str,
        target: str | None = None,
        amount: int | None = None,
        argument: str = "",
        to: list[str] | None = None,
    ) -> None:
        """``sender`` makes a game move (see :class:`GameMove`), seen by ``to`` only if given
        (``to`` may name the sender alone: a move nobody else sees).

        ValueError if ``sender`` is not an active participant, ``target`` or a name in
        ``to`` is not a participant, or ``move`` is empty. Whether the move is legal is for
        the game's rules, checked before it is made.
        """
        self._check_active(sender)
        if not move:
            raise ValueError("a move needs a name")
        if target is not None:
            self._check_audience([target], "target")
        if to is not None:
            if not to:
                raise ValueError("to is an empty list; use None for everyone")
            self._check_audience(to, "to")
        GameMove(move=move, target=target, amount=amount, argument=argument)

    @event_registered(operation_type=OperationType.WRITE, event_type=EventType.ENV)
    def eliminate(self, participant: str, content: str) -> None:
        """``participant`` is out of the game (everyone perceives ``content``) and never acts
        again."""
        self._check_active(participant)
        self.left.add(participant)

    @event_registered(operation_type=OperationType.WRITE, event_type=EventType.ENV)
    def announce(self, content: str, perceivers: list[str] | None = None) -> None:
        """Something happens; ``perceivers`` (default: everyone) notice ``content``."""
        if perceivers:
            self._check_audience(perceivers, "perceivers")

    @event_registered(operation_type=OperationType.WRITE, event_type=EventType.ENV)
    def deliver_message(self, sender: str, content: str, to: list[str]) -> None:
        """``sender``, who is outside the conversation, sends ``content`` to ``to``."""
        if sender in self.participants or sender == ENVIRONMENT_SENDER:
            raise ValueError(
                f"deliver_message is for senders outside the conversation; {sender!r} is not"
            )
        if not to:
            raise ValueError("deliver_message needs at least one recipient")
        self._check_audience(to, "to")

    def _check_active(self, name: str) -> None:
        if name not in self.participants:
            raise ValueError(f"{name!r} is not a participant; participants: {self.participants}")
        if name in self.left:
            raise ValueError(f"{name!r} has left the conversation and cannot act")

    def _check_audience(self, names: Sequence[str], field: str) -> None:
        unknown = [name for name in names if name not in self.participants]
        if unknown:
            raise ValueError(f"{field} {unknown} are not participants: {self.participants}")

    def get_state(self) -> dict[str, Any]:
        return {"participants": list(self.participants), "left": sorted(self.left)}

    def load_state(self, state_dict: dict[str, Any]) -> None:
        self._set_participants(list(state_dict.get("participants", [])))
        self.left = set(state_dict.get("left", []))
