"""`HumanAgent`: a person at the terminal chooses each action.

Each turn the agent shows what its player may see (the template ``agent_human.j2``: the
context and transcript on the first turn, what is new after that) and reads one command:

* ``say <words>`` (or ``speak``), ``action <what you do>``, ``gesture <expression>``
  (or ``nonverbal``), ``none``, ``leave``;
* a private action starts with ``@`` and comma-separated recipients:
  ``@Alice,Bob say psst`` (names may contain spaces: ``@Alice Park say hi``).

A command that cannot be read, is not available this turn or names an unknown recipient
is explained and asked again. End of input (EOF, no terminal) is a
:class:`HumanInputError`, never a silent "did nothing".
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from sotopia_are import SotopiaAreError
from sotopia_are.llm import PromptLibrary
from sotopia_are.messages import AgentAction, validate_recipients
from sotopia_are.messages.action import ActionType
from sotopia_are.social.protocol import AgentTurn, CallRecord

__all__ = ["COMMANDS", "HUMAN_TEMPLATE", "HumanAgent", "HumanInputError", "parse_command"]

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
        messages = self.prompts.render(
            HUMAN_TEMPLATE,
            {
                "agent_name": self._name,
                "turn_number": turn.turn_number,
                "context": context,
                "last_turn": turn.observation.last_turn,
                "commands": [_USAGE[a] for a in turn.available_actions],
                "recipients": [p for p in turn.participants if p != self._name],
            },
        )
        return "\n\n".join(message.content for message in messages)

    async def act(self, turn: AgentTurn) -> AgentAction:
        """Show the turn, then read commands until one is valid and available.

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
