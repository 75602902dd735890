"""`GameMove`: one move of a social game (speech, a vote, a target, an offer or an answer)."""

from pydantic import Field

from .message import Message

__all__ = ["GameMove"]


class GameMove(Message):
    """A move named by the game's rules: ``move`` is the action's name in the current phase
    (``"vote"``, ``"kill"``, ``"offer"``, ``"say"``...), with what that action takes —
    ``target`` (a participant), ``amount`` (an offer's terms) or ``argument`` (speech).

    Whether a move is legal is for the game's rules to say, not for this message.
    """

    move: str = Field(description="the name of one of the actions allowed now")
    target: str | None = Field(default=None, description="the participant the move is aimed at")
    amount: int | None = Field(default=None, description="the terms of an offer")
    argument: str = Field(default="", description="what is said, for a speech action")

    @property
    def is_speech(self) -> bool:
        """Whether the move only says something (no target, no terms)."""
        return bool(self.argument) and self.target is None and self.amount is None

    def to_natural_language(self) -> str:
        """``vote Bob``, ``offer 60``, ``accept``; speech is its words."""
        if self.is_speech:
            return self.argument
        words = [self.move]
        if self.target is not None:
            words.append(self.target)
        if self.amount is not None:
            words.append(str(self.amount))
        text = " ".join(words)
        return f"{text}: {self.argument}" if self.argument else text
