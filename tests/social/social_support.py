"""Helpers of the social tests: specs, and an agent that plays given actions and keeps
every turn it was shown."""

from collections.abc import Sequence
from typing import Any

from sotopia_are.messages import AgentAction
from sotopia_are.social import AgentTurn, CallRecord, EpisodeSpec

MODEL = "openai/test-model"
NAMES = ["Mira Okafor", "Tomas Lind", "Priya Nair"]


def make_spec(count: int = 2, **fields: Any) -> EpisodeSpec:
    """A spec for the first ``count`` of NAMES at a community-garden plot auction."""
    names = NAMES[:count]
    return EpisodeSpec(
        scenario="Neighbours bid for the last free plot of the community garden.",
        agent_names=names,
        agent_backgrounds=[f"{name} has lived on Ash Lane for years." for name in names],
        agent_goals=[f"secret goal of {name}" for name in names],
        **fields,
    )


def say(text: str, to: Sequence[str] | None = None) -> AgentAction:
    return AgentAction(action_type="speak", argument=text, to=list(to) if to else None)


NOTHING = AgentAction(action_type="none", argument="")
LEAVE = AgentAction(action_type="leave", argument="")


class PlaybackAgent:
    """Plays ``actions`` in order (then does nothing) and records each turn it is shown."""

    def __init__(self, name: str, actions: Sequence[AgentAction] = ()) -> None:
        self._name = name
        self.actions = list(actions)
        self.turns: list[AgentTurn] = []

    @property
    def name(self) -> str:
        return self._name

    async def act(self, turn: AgentTurn) -> AgentAction:
        self.turns.append(turn)
        return self.actions.pop(0) if self.actions else NOTHING

    def call_records(self) -> Sequence[CallRecord]:
        return ()
