"""`ReportingAgent`: a seat's player that reports each model call as soon as it is made.

A hosted session can be stopped by a server restart at any moment, and the runner hands
an episode's calls over only when it ends. So each player of a session is wrapped: after
every turn (answered or raised) the calls its agent made during it are reported, in the
order made, to the session — which keeps them for its record and streams them to the
store (:meth:`~sotopia_are.storage.EpisodeRecorder.on_call`). The record's calls are then
the calls in the order they were made, the store's stream the same, and a session
resumed after a restart starts from the calls already stored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sotopia_are.messages import AgentAction, GameMove
from sotopia_are.social import AgentTurn, CallRecord, SocialAgent

__all__ = ["ReportingAgent"]


class ReportingAgent:
    """Plays as ``agent`` and passes each call it makes to ``report``, once, in order."""

    def __init__(self, agent: SocialAgent, report: Callable[[CallRecord], None]) -> None:
        self._agent = agent
        self._report = report
        self._reported = 0

    @property
    def name(self) -> str:
        return self._agent.name

    async def act(self, turn: AgentTurn) -> AgentAction | GameMove:
        """The agent's answer; its calls of this turn are reported first (also when it
        raised: a failed call was still made)."""
        try:
            return await self._agent.act(turn)
        finally:
            made = self._agent.call_records()
            for call in made[self._reported :]:
                self._report(call)
            self._reported = len(made)

    def call_records(self) -> Sequence[CallRecord]:
        """The agent's calls (as reported)."""
        return self._agent.call_records()
