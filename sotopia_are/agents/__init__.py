"""Episode participants: the objects the social runner asks for actions.

Every agent here satisfies :class:`sotopia_are.social.protocol.SocialAgent` (a ``name``,
``async act(turn) -> AgentAction | GameMove`` and ``call_records()``). This layer imports
``messages``, ``social`` and ``llm`` only.
"""

from sotopia_are.agents.action_reply import (
    action_output_type,
    match_participant,
    normalize_action_reply,
)
from sotopia_are.agents.game_move_reply import (
    move_output_type,
    move_schema,
    normalize_move_reply,
)
from sotopia_are.agents.human_agent import (
    COMMANDS,
    HUMAN_TEMPLATE,
    HumanAgent,
    HumanInputError,
    parse_command,
    parse_move_command,
)
from sotopia_are.agents.llm_agent import (
    ACTION_TEMPLATE,
    GAME_MOVE_TEMPLATE,
    LLMAgent,
    llm_agents_for,
)
from sotopia_are.agents.script_writing import (
    SCRIPT_TEMPLATE,
    ScriptWritingAgent,
    WrittenScript,
    script_output_type,
    write_script,
)
from sotopia_are.agents.scripted_agent import (
    OnExhausted,
    ScriptedAgent,
    ScriptExhaustedError,
    ScriptMismatchError,
    script_turns,
)

__all__ = [
    "ACTION_TEMPLATE",
    "COMMANDS",
    "GAME_MOVE_TEMPLATE",
    "HUMAN_TEMPLATE",
    "SCRIPT_TEMPLATE",
    "HumanAgent",
    "HumanInputError",
    "LLMAgent",
    "OnExhausted",
    "ScriptExhaustedError",
    "ScriptMismatchError",
    "ScriptWritingAgent",
    "ScriptedAgent",
    "WrittenScript",
    "action_output_type",
    "llm_agents_for",
    "match_participant",
    "move_output_type",
    "move_schema",
    "normalize_action_reply",
    "normalize_move_reply",
    "parse_command",
    "parse_move_command",
    "script_output_type",
    "script_turns",
    "write_script",
]
