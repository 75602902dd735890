"""The message interface every Sotopia message implements, and the simplest message."""

from pydantic import BaseModel, Field

__all__ = ["Message", "SimpleMessage"]


class Message(BaseModel):
    """An interface for messages: anything that can render itself as natural language."""

    def to_natural_language(self) -> str:
        """Render the message as the text an agent or evaluator reads."""
        raise NotImplementedError


class SimpleMessage(Message):
    """A message holding a single string, rendered as that string."""

    message: str = Field(description="the message")

    def to_natural_language(self) -> str:
        return self.message
