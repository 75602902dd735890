"""`EpisodeResult`: the outcome of one episode; everything in it derives from its event log."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from sotopia_are.messages import AgentAction, render_script
from sotopia_are.simulation.environment import Environment
from sotopia_are.simulation.types import CompletedEvent

from .entries import ConversationEntry
from .protocol import CallRecord
from .scenario import EpisodeScenario
from .spec import EpisodeSpec
from .status import EpisodeStatus
from .views import AgentView, EpisodeViews

__all__ = ["EpisodeResult"]


@dataclass(frozen=True, eq=False)
class EpisodeResult:
    """One episode: its event log, the agents' views of it and the agents' model calls.

    ``events`` is the environment's log (the single source of truth); ``views`` and every
    transcript are derived from it. ``reason`` is the termination reason, or the failure.
    """

    spec: EpisodeSpec
    status: EpisodeStatus
    reason: str
    failed_agent: str | None
    turns_played: int
    events: tuple[CompletedEvent, ...]
    call_records: Mapping[str, tuple[CallRecord, ...]]
    views: EpisodeViews
    environment: Environment
    scenario: EpisodeScenario

    @property
    def episode_id(self) -> str:
        """The spec's episode id."""
        return self.spec.episode_id

    @property
    def entries(self) -> list[ConversationEntry]:
        """Everything that happened in the conversation, in log order (omniscient)."""
        return list(self.views.entries)

    def view(self, agent_name: str) -> AgentView:
        """What ``agent_name`` could perceive."""
        return self.views.agents[agent_name]

    def transcript(self, viewer: str | None = None) -> str:
        """``viewer``'s transcript; with None the evaluator's, which is omniscient by
        design and marks private entries as private."""
        return self.views.transcript(viewer)

    def actions(self) -> list[tuple[str, AgentAction]]:
        """Every ``(agent, action)`` in log order, doing nothing included."""
        return [(e.sender, e.action) for e in self.views.entries if e.action is not None]

    def to_script(self) -> str:
        """The agents' actions as a script ``parse_script`` reads back (one numbered turn
        per action; ENV events are not part of a script)."""
        return render_script(self.actions())

    def canonical_log(self) -> str:
        """The event log as canonical JSON, for byte-for-byte comparison of runs."""
        return json.dumps([event.to_dict() for event in self.events], sort_keys=True)
