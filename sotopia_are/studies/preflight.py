"""Which models a study verb is about to call, for the LLM layer's preflight.

The verbs (:func:`~sotopia_are.studies.arun`, :func:`~sotopia_are.studies.batch`,
:func:`~sotopia_are.studies.arate`, :func:`~sotopia_are.studies.arate_stored`…) check their
agents' and judges' models with :func:`sotopia_are.llm.apreflight` before anything is
stored, unless called with ``preflight=False``; the same check for both, so the same
mistake fails the same way on an agent and on a judge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sotopia_are.evaluation import LLMJudge
from sotopia_are.llm import LLMSession, ModelUse, preflight
from sotopia_are.record import Judge
from sotopia_are.social import SocialAgent

__all__ = ["agent_uses", "check_judges", "judge_uses"]


def agent_uses(players: Sequence[SocialAgent] | Mapping[str, SocialAgent]) -> list[ModelUse]:
    """The models the players call: those with a ``model`` name and an
    :class:`~sotopia_are.llm.LLMSession` (LLM agents; scripted and human players call
    none)."""
    uses = []
    for agent in players.values() if isinstance(players, Mapping) else players:
        model = getattr(agent, "model", None)
        session = getattr(agent, "session", None)
        if isinstance(model, str) and isinstance(session, LLMSession):
            uses.append(ModelUse(model, session, f"agent {agent.name}"))
    return uses


def judge_uses(judges: Iterable[Judge]) -> list[ModelUse]:
    """The models ``judges`` call (a rules judge calls none)."""
    return [
        ModelUse(judge.model, judge.session, "the judge")
        for judge in judges
        if isinstance(judge, LLMJudge)
    ]


def check_judges(judges: Sequence[LLMJudge]) -> None:
    """The preflight of every one of ``judges`` at once (outside asyncio), for a caller
    that then rates with them one verb after another (``preflight=False`` to each), so a
    mistake in the last judge stops the first from rating."""
    preflight(judge_uses(judges))
