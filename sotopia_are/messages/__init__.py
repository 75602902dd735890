"""Sotopia's message classes and the conversation-script parser.

What Sotopia users import from `sotopia.messages` lives here. This layer imports nothing
else of sotopia_are.
"""

from .action import ActionType, AgentAction, match_participant, validate_recipients
from .background import ScriptBackground
from .context import parse_background
from .game_move import GameMove
from .message import Message, SimpleMessage
from .observation import Observation
from .parser import (
    ParsedScript,
    ScriptAction,
    ScriptNote,
    ScriptParseError,
    parse_dialogue,
    parse_script,
    parse_script_notes,
    split_turns,
)
from .render import render_action, render_script
from .response import Rate, ScriptEnvironmentResponse
from .script import ScriptInteraction, ScriptInteractionReturnType

__all__ = [
    "ActionType",
    "AgentAction",
    "GameMove",
    "Message",
    "Observation",
    "ParsedScript",
    "Rate",
    "ScriptAction",
    "ScriptBackground",
    "ScriptEnvironmentResponse",
    "ScriptInteraction",
    "ScriptInteractionReturnType",
    "ScriptNote",
    "ScriptParseError",
    "SimpleMessage",
    "match_participant",
    "parse_background",
    "parse_dialogue",
    "parse_script",
    "parse_script_notes",
    "render_action",
    "render_script",
    "split_turns",
    "validate_recipients",
]
