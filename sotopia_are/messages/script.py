"""`ScriptInteraction`: a whole conversation as script text, with Sotopia's parse methods."""

from collections.abc import Iterable, Sequence

from pydantic import Field

from .action import AgentAction
from .message import Message
from .observation import Observation
from .parser import (
    ParsedScript,
    ScriptAction,
    parse_dialogue,
    parse_script,
    parse_script_notes,
    split_turns,
)
from .render import render_script

__all__ = ["ScriptInteraction", "ScriptInteractionReturnType"]

ScriptInteractionReturnType = tuple[list[list[tuple[str, str, Message]]], list[tuple[str, Message]]]
"""Per-turn `(sender, receiver, message)` triples, and the `(speaker, action)` pairs."""


class ScriptInteraction(Message):
    """The script of an interaction (`Turn #N` then `Name said: "…"`, …) and its parser."""

    interactions: str = Field(description="The script of the interaction between participants")

    @classmethod
    def from_actions(cls, actions: Iterable[tuple[str, AgentAction]]) -> "ScriptInteraction":
        """The canonical script of `(speaker, action)` pairs; `parse` gives them back."""
        return cls(interactions=render_script(actions))

    def to_natural_language(self) -> str:
        return self.interactions

    def actions(self, agent_names: Sequence[str]) -> list[ScriptAction]:
        """The script's actions with their turn numbers and line numbers."""
        return parse_script(self.interactions, agent_names)

    def read(self, agent_names: Sequence[str]) -> ParsedScript:
        """The script's actions, and notes on the lines it skipped or read with a caveat."""
        return parse_script_notes(self.interactions, agent_names)

    def parse(self, agent_names: list[str], background: str) -> ScriptInteractionReturnType:
        """Sotopia's shape: per-turn messages for every agent, and the `(speaker, action)` list.

        Turn 0 shows everyone `background`; in each later turn the speaker acts and every
        other participant did nothing. Raises `ScriptParseError` on an unreadable line.
        """
        parsed = parse_script(self.interactions, agent_names)
        results: list[list[tuple[str, str, Message]]] = [
            [
                (
                    "Environment",
                    name,
                    Observation(last_turn=background, turn_number=0, available_actions=["none"]),
                )
                for name in agent_names
            ]
        ]
        agent_results: list[tuple[str, Message]] = []
        for number, item in enumerate(parsed, start=1):
            turn: list[tuple[str, str, Message]] = [
                (
                    "Environment",
                    name,
                    Observation(
                        last_turn="environment is the agent",
                        turn_number=number,
                        available_actions=["none"],
                    ),
                )
                for name in agent_names
            ]
            turn.append((item.speaker, "Environment", item.action))
            turn.extend(
                (name, "Environment", AgentAction(action_type="none", argument="did nothing"))
                for name in agent_names
                if name != item.speaker
            )
            results.append(turn)
            agent_results.append((item.speaker, item.action))
        return results, agent_results

    def parse_single_dialogue(
        self, dialogue: str, agent_names: Sequence[str] | None = None
    ) -> dict[str, str | int | list[str] | None]:
        """Read one turn (`Turn #N\\nName said: "…"`, header optional) into a dict.

        Keys: `turn` (None without header), `name`, `action` (the action type), `argument`
        and `to`. Without `agent_names` the speaker is read from the line itself.
        """
        item = parse_dialogue(dialogue, agent_names)
        return {
            "turn": item.turn,
            "name": item.speaker,
            "action": item.action.action_type,
            "argument": item.action.argument,
            "to": item.action.to,
        }

    def split_by_turn(self, input_string: str) -> list[str]:
        """The text of each turn of `input_string`, never split inside quoted speech."""
        return split_turns(input_string)

    @staticmethod
    def default_value_for_return_type() -> ScriptInteractionReturnType:
        """Sotopia's placeholder result: two unnamed agents, one empty action."""
        results: list[list[tuple[str, str, Message]]] = [
            [
                (
                    "Environment",
                    name,
                    Observation(
                        last_turn="Environment is the agent",
                        turn_number=0,
                        available_actions=["none"],
                    ),
                )
                for name in ["none", "none"]
            ]
        ]
        agent_results: list[tuple[str, Message]] = [
            ("", AgentAction(action_type="none", argument=""))
        ]
        return results, agent_results
