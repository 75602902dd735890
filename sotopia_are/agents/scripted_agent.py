"""`ScriptedAgent`: an episode participant that plays back given actions.

Two ways to map the runner's turns to actions:

* **in order** (``actions`` a sequence): each call to :meth:`~ScriptedAgent.act` in
  which the agent may act plays the next action, whatever the turn number. A turn whose
  only available action is ``none`` (another agent's turn in round-robin) is answered
  with ``none`` and consumes nothing. Fits round-robin and random turn-taking when the
  script's speaker order is the turn order — for a script, the runner's ``fixed`` turn
  policy with the script's speakers as ``turn_order``.
* **by turn** (``actions`` a mapping ``turn_number → action``): the agent plays the
  action scheduled for ``turn.turn_number`` and does nothing in turns it has no action
  for. Fits simultaneous turn-taking, and is how a script whose speakers do not
  alternate (or whose turns hold several speakers' actions) replays exactly.

Running out — no next action in order, or a turn after ``last_turn`` by turn — raises
:class:`ScriptExhaustedError` unless ``on_exhausted="none"``, in which case the agent
does nothing from then on (the runner's "nobody did anything" rule then ends the episode).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from sotopia_are import SotopiaAreError
from sotopia_are.messages import (
    AgentAction,
    ScriptAction,
    ScriptInteraction,
    parse_script,
)
from sotopia_are.social.protocol import AgentTurn, CallRecord

__all__ = [
    "OnExhausted",
    "ScriptExhaustedError",
    "ScriptMismatchError",
    "ScriptedAgent",
    "script_turns",
]

OnExhausted = Literal["raise", "none"]
"""What a scripted agent does when asked to act after its script ran out."""

_NOTHING = AgentAction(action_type="none", argument="")


class ScriptExhaustedError(SotopiaAreError, RuntimeError):
    """A scripted agent was asked to act after its script ran out."""


class ScriptMismatchError(SotopiaAreError, ValueError):
    """A scripted action does not fit the turn it is played in (its type is not
    available, or its recipients are not participants), or a script cannot be split
    into turns for replay."""


class ScriptedAgent:
    """Plays ``actions`` (a sequence: in order; a mapping: by turn number).

    ``last_turn`` (by turn only) is the last turn of the whole script, so an agent whose
    own last action comes earlier still does nothing until then rather than running out;
    it defaults to the agent's own last scheduled turn.
    """

    def __init__(
        self,
        name: str,
        actions: Sequence[AgentAction] | Mapping[int, AgentAction],
        *,
        last_turn: int | None = None,
        on_exhausted: OnExhausted = "raise",
    ) -> None:
        self._name = name
        self.on_exhausted: OnExhausted = on_exhausted
        self.by_turn: dict[int, AgentAction] | None = None
        self.in_order: list[AgentAction] = []
        if isinstance(actions, Mapping):
            self.by_turn = dict(actions)
            own_last = max(self.by_turn, default=None)
            if last_turn is not None and own_last is not None and last_turn < own_last:
                raise ValueError(f"last_turn {last_turn} is before {name!r}'s turn {own_last}")
            self.last_turn = last_turn if last_turn is not None else own_last
        else:
            if last_turn is not None:
                raise ValueError("last_turn applies only to actions given by turn number")
            self.in_order = list(actions)
            self.last_turn = None
        self._next = 0

    @classmethod
    def from_script(
        cls,
        script: str | ScriptInteraction | Sequence[ScriptAction],
        agent_names: Sequence[str],
        *,
        by_turn: bool = False,
        first_turn: int = 0,
        on_exhausted: OnExhausted = "raise",
    ) -> dict[str, ScriptedAgent]:
        """One agent per name in ``agent_names`` playing its part of ``script``.

        ``script`` is script text, a :class:`ScriptInteraction`, or already parsed
        actions. In order, each agent plays its own lines in script order. By turn, the
        script's turns are numbered ``first_turn, first_turn + 1, …`` in order of
        appearance (the social runner numbers its turns from 0): a ``Turn #N`` header
        opens a turn holding every action under it, and each action of a headerless
        script is a turn of its own; a speaker with two actions in one turn is a
        :class:`ScriptMismatchError`. Raises
        :class:`~sotopia_are.messages.ScriptParseError` for unreadable text.
        """
        actions = _parsed(script, agent_names)
        if not by_turn:
            return {
                name: cls(
                    name,
                    [item.action for item in actions if item.speaker == name],
                    on_exhausted=on_exhausted,
                )
                for name in agent_names
            }
        schedule = script_turns(actions, first_turn=first_turn)
        last = first_turn + len(schedule) - 1
        return {
            name: cls(
                name,
                {number: turn[name] for number, turn in schedule.items() if name in turn},
                last_turn=last,
                on_exhausted=on_exhausted,
            )
            for name in agent_names
        }

    @property
    def name(self) -> str:
        return self._name

    @property
    def remaining(self) -> int:
        """How many scripted actions (in order) are still to be played; 0 by turn."""
        return len(self.in_order) - self._next

    async def act(self, turn: AgentTurn) -> AgentAction:
        """The scripted action for ``turn`` (see the module docstring for the mapping).

        Raises :class:`ScriptExhaustedError` when the script has run out (unless
        ``on_exhausted="none"``) and :class:`ScriptMismatchError` when the action does not
        fit the turn.
        """
        action = self._by_turn(turn) if self.by_turn is not None else self._in_order(turn)
        if action.action_type not in turn.available_actions:
            raise ScriptMismatchError(
                f"{self._name!r}'s scripted action {action.to_natural_language()!r} in turn "
                f"{turn.turn_number} is not available (available: {list(turn.available_actions)})"
            )
        if action.to:
            try:
                AgentAction.model_validate(
                    action.model_dump(),
                    context={"agent_names": list(turn.participants), "sender": self._name},
                )
            except ValueError as error:
                raise ScriptMismatchError(str(error)) from error
        return action

    def _in_order(self, turn: AgentTurn) -> AgentAction:
        if tuple(turn.available_actions) == ("none",):
            return _NOTHING
        if self._next >= len(self.in_order):
            return self._exhausted(f"all {len(self.in_order)} scripted actions were played")
        action = self.in_order[self._next]
        self._next += 1
        return action

    def _by_turn(self, turn: AgentTurn) -> AgentAction:
        assert self.by_turn is not None
        if self.last_turn is None or turn.turn_number > self.last_turn:
            return self._exhausted(f"the script ends at turn {self.last_turn}")
        return self.by_turn.get(turn.turn_number, _NOTHING)

    def _exhausted(self, why: str) -> AgentAction:
        if self.on_exhausted == "none":
            return _NOTHING
        raise ScriptExhaustedError(
            f"scripted agent {self._name!r} was asked to act but {why}; end the episode "
            f"with the script (max turns) or pass on_exhausted='none'"
        )

    def call_records(self) -> Sequence[CallRecord]:
        """Always empty: a scripted agent calls no model."""
        return ()


def script_turns(
    script: Iterable[ScriptAction], *, first_turn: int = 0
) -> dict[int, dict[str, AgentAction]]:
    """The script's turns for replay by turn: ``turn_number → {speaker: action}``.

    Turns are numbered from ``first_turn`` in order of appearance (see
    :meth:`ScriptedAgent.from_script`); raises :class:`ScriptMismatchError` when a
    speaker acts twice in one turn.
    """
    schedule: dict[int, dict[str, AgentAction]] = {}
    lines: dict[str, int] = {}
    number = first_turn - 1
    previous: ScriptAction | None = None
    for item in script:
        # A new turn starts at each action of a headerless script, and at each header.
        if previous is None or item.turn is None or item.turn != previous.turn:
            number += 1
            schedule[number] = {}
            lines = {}
        if item.speaker in schedule[number]:
            raise ScriptMismatchError(
                f"{item.speaker!r} acts twice in turn {item.turn} (lines {lines[item.speaker]} "
                f"and {item.line}); one agent does one thing per turn"
            )
        schedule[number][item.speaker] = item.action
        lines[item.speaker] = item.line
        previous = item
    return schedule


def _parsed(
    script: str | ScriptInteraction | Sequence[ScriptAction], agent_names: Sequence[str]
) -> list[ScriptAction]:
    if isinstance(script, ScriptInteraction):
        return script.actions(agent_names)
    if isinstance(script, str):
        return parse_script(script, agent_names)
    return list(script)
