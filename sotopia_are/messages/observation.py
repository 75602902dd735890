"""`Observation`: what the environment shows an agent at the start of a turn."""

from pydantic import Field

from .action import ActionType
from .message import Message

__all__ = ["Observation"]


class Observation(Message):
    """The last turn, the turn number and the actions the agent may take now."""

    last_turn: str = Field(description="the last turn of the conversation")
    turn_number: int = Field(description="the turn number of the conversation")
    available_actions: list[ActionType] = Field(description="the available actions")

    def to_natural_language(self) -> str:
        # Turn 0 carries the scenario background; later observations are numbered from 0,
        # which is why Sotopia prints `turn_number - 1`.
        if self.turn_number == 0:
            return f"\n{self.last_turn}\nConversation Starts:\n"
        return f"Turn #{self.turn_number - 1}: {self.last_turn}\n"
