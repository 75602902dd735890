"""`HumanAgent`: a person at the terminal chooses each action.

Each turn the agent shows what its player may see (the template ``agent_human.j2``: the
context and transcript on the first turn, what is new after that) and reads one command:

* ``say <words>`` (or ``speak``), ``action <what you do>``, ``gesture <expression>``
  (or ``nonverbal``), ``none``, ``leave``;
* a private action starts with ``@`` and comma-separated recipients:
  ``@Alice,Bob say psst`` (names may contain spaces: ``@Alice Park say hi``).

In a game turn (one whose ``moves`` are not empty) the view lists the moves allowed now
and the command is one of them: its name, then its target (``vote Bob``), its amount
(``offer 60``) or its words (``say I am the seer``); words after an ``accept``, ``reject``
or ``pass`` are dropped (those moves carry none). It is read as a model's answer is
(:mod:`sotopia_are.agents.game_move_reply`), so an illegal move is refused in the same
words.

A command that cannot be read, is not available this turn or names an unknown recipient
is explained and asked again. End of input (EOF, no terminal) is a
:class:`HumanInputError`, never a silent "did nothing".
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from sotopia_are import SotopiaAreError
from sotopia_are.agents.game_move_reply import (
    move_output_type,
    normalize_move_reply,
    playable_moves,
)
from sotopia_are.llm import PromptLibrary
from sotopia_are.messages import AgentAction, GameMove, validate_recipients
from sotopia_are.messages.action import ActionType
from sotopia_are.social.protocol import AgentTurn, CallRecord, MoveOption

__all__ = [
    "COMMANDS",
    "HUMAN_TEMPLATE",
    "HumanAgent",
    "HumanInputError",
    "move_usage",
    "parse_command",
    "parse_move_command",
]

HUMAN_TEMPLATE = "agent_human.j2"
"""The template of what :class:`HumanAgent` shows each turn (in ``prompts/``)."""

COMMANDS: dict[str, ActionType] = {
    "say": "speak",
    "speak": "speak",
    "action": "action",
    "gesture": "non-verbal communication",
    "nonverbal": "non-verbal communication",
    "none": "none",
    "leave": "leave",
}
"""Command words and the action type each one means."""

_USAGE: dict[ActionType, str] = {
    "speak": "say <words>",
    "action": "action <what you do>",
    "non-verbal communication": "gesture <expression>",
    "none": "none",
    "leave": "leave",
}
_WITH_ARGUMENT: frozenset[ActionType] = frozenset({"speak", "action", "non-verbal communication"})


class HumanInputError(SotopiaAreError, RuntimeError):
    """No action could be read because the input ended (EOF)."""


def parse_command(line: str, sender: str, participants: Sequence[str]) -> AgentAction:
    """The action a command line means (see the module docstring for the syntax).

    Raises :class:`ValueError` explaining what is wrong with ``line``.
    """
    text = line.strip()
    to: list[str] | None = None
    if text.startswith("@"):
        to, text = _recipients(text[1:], sender, participants)
    word, _, argument = text.partition(" ")
    action_type = COMMANDS.get(word.lower())
    if action_type is None:
        raise ValueError(
            f"unknown command {word!r}; start with one of: {', '.join(COMMANDS)}"
            if word
            else f"no command; start with one of: {', '.join(COMMANDS)}"
        )
    argument = argument.strip()
    if action_type in _WITH_ARGUMENT and not argument:
        raise ValueError(f"{word!r} needs some text after it, e.g. '{word} hello'")
    if action_type not in _WITH_ARGUMENT:
        if to:
            raise ValueError(f"{word!r} cannot be private; only say, action and gesture can")
        argument = ""
    return AgentAction(action_type=action_type, argument=argument, to=to)


def move_usage(option: MoveOption) -> str:
    """How to write ``option`` as a command (``vote <Bob|Carol>``, ``offer <0-100>``)."""
    if option.kind == "speak":
        return f"{option.name} <words>"
    if option.kind == "target":
        return f"{option.name} <{'|'.join(option.targets)}>"
    if option.kind == "offer":
        return f"{option.name} <{option.amount_min}-{option.amount_max}>"
    return option.name


def parse_move_command(
    line: str, moves: Sequence[MoveOption], participants: Sequence[str]
) -> GameMove:
    """The game move a command line means among ``moves`` (see the module docstring).

    Raises :class:`ValueError` explaining what is wrong with ``line``, in the words a
    model's illegal answer gets.
    """
    text = line.strip()
    # The longest name first, so a move named "vote" never hides one named "vote early".
    by_length = sorted(playable_moves(moves), key=lambda option: len(option.name), reverse=True)
    option = next((o for o in by_length if _starts_with_name(text.lower(), o.name.lower())), None)
    if option is None:
        word = text.split(" ", 1)[0]
        raise ValueError(
            f"{word!r} is not a move you may make now; you may: "
            f"{', '.join(move_usage(o) for o in playable_moves(moves))}"
            if word
            else "no move; you may: " + ", ".join(move_usage(o) for o in playable_moves(moves))
        )
    rest = text[len(option.name) :].strip()
    answer: dict[str, Any] = {"move": option.name}
    if option.kind == "target":
        answer["target"] = rest or None
    elif option.kind == "offer":
        answer["amount"] = rest or None
    else:
        answer["argument"] = rest
    data, _notes = normalize_move_reply(answer, moves, participants)
    try:
        legal = move_output_type(tuple(moves), tuple(participants)).model_validate(data)
        return GameMove.model_validate(legal.model_dump())
    except ValidationError as error:
        raise ValueError("; ".join(_reason(e) for e in error.errors())) from None


def _reason(error: Any) -> str:
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["loc"]:
        return f"{'.'.join(str(part) for part in error['loc'])}: {message}"
    return message


def _starts_with_name(text: str, name: str) -> bool:
    return text.startswith(name) and text[len(name) : len(name) + 1] in ("", " ", ",")


def _recipients(text: str, sender: str, participants: Sequence[str]) -> tuple[list[str], str]:
    """Read ``Name,Name rest`` (names matched longest first); return them and ``rest``."""
    by_length = sorted(participants, key=len, reverse=True)
    names: list[str] = []
    rest = text
    while True:
        name = next((p for p in by_length if _starts_with_name(rest, p)), None)
        if name is None:
            unknown = rest.split(",", 1)[0].split(" ", 1)[0]
            names.append(unknown)
            break  # validate_recipients below names it as unknown
        names.append(name)
        rest = rest[len(name) :].lstrip()
        if not rest.startswith(","):
            break
        rest = rest[1:].lstrip()
    return validate_recipients(names, participants, sender), rest


class HumanAgent:
    """Asks a person for each action through ``input_fn`` and ``output_fn``.

    ``input_fn(prompt)`` returns one line and raises :class:`EOFError` when input ends
    (like :func:`input`); it runs in a worker thread so other episodes keep going while a
    person thinks. ``output_fn`` shows text (like :func:`print`).
    """

    def __init__(
        self,
        name: str,
        input_fn: Callable[[str], str] = input,
        output_fn: Callable[[str], object] = print,
        *,
        prompts: PromptLibrary | None = None,
    ) -> None:
        self._name = name
        self.input_fn = input_fn
        self.output_fn = output_fn
        self.prompts = prompts or PromptLibrary()
        self._shown_context = False

    @property
    def name(self) -> str:
        return self._name

    def view(self, turn: AgentTurn) -> str:
        """What the player is shown for ``turn``."""
        context = None
        if not self._shown_context:
            context = "\n\n".join(
                part
                for part in (turn.background.to_natural_language(), turn.transcript.strip())
                if part
            )
        if turn.moves:
            commands = [move_usage(option) for option in playable_moves(turn.moves)]
            recipients: list[str] = []  # a move's audience is the game's to say
        else:
            commands = [_USAGE[a] for a in turn.available_actions]
            recipients = [p for p in turn.participants if p != self._name]
        messages = self.prompts.render(
            HUMAN_TEMPLATE,
            {
                "agent_name": self._name,
                "turn_number": turn.turn_number,
                "phase": turn.phase,
                "context": context,
                "last_turn": turn.observation.last_turn,
                "commands": commands,
                "recipients": recipients,
            },
        )
        return "\n\n".join(message.content for message in messages)

    async def act(self, turn: AgentTurn) -> AgentAction | GameMove:
        """Show the turn, then read commands until one is valid and available: in a game
        turn a legal :class:`GameMove`, else an :class:`AgentAction`.

        Raises :class:`HumanInputError` when the input ends first.
        """
        self.output_fn(self.view(turn))
        self._shown_context = True
        while True:
            try:
                line = await asyncio.to_thread(self.input_fn, f"{self._name}> ")
            except EOFError:
                raise HumanInputError(
                    f"no action from {self._name!r}: the input ended (EOF). A HumanAgent "
                    f"needs an interactive terminal; use ScriptedAgent or LLMAgent to run "
                    f"without one."
                ) from None
            if turn.moves:
                try:
                    return parse_move_command(line, turn.moves, turn.participants)
                except ValueError as error:
                    self.output_fn(f"Sorry: {error}")
                    continue
            try:
                action = parse_command(line, self._name, turn.participants)
            except ValueError as error:
                self.output_fn(f"Sorry: {error}")
                continue
            if action.action_type not in turn.available_actions:
                self.output_fn(
                    f"Sorry: {action.action_type!r} is not available now; you may: "
                    f"{', '.join(_USAGE[a] for a in turn.available_actions)}"
                )
                continue
            return action

    def call_records(self) -> Sequence[CallRecord]:
        """Always empty: a human calls no model."""
        return ()
