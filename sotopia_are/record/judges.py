"""`RecordJudge`: a judge that rates a record by itself — the other kind next to `LLMJudge`.

The one rating path (:func:`~sotopia_are.record.give_verdict`, and the verbs over it)
takes either kind: an :class:`~sotopia_are.evaluation.LLMJudge` reads the transcript and
asks a model; a :class:`RecordJudge` computes its verdict from the record itself (a
game's rules judge, :class:`sotopia_are.games.GameJudge`). Both give a
:class:`~sotopia_are.record.Verdict` kept by its :attr:`~Verdict.key`, so everything that
reads verdicts reads both alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from sotopia_are.evaluation import LLMJudge

from .verdict import Verdict

if TYPE_CHECKING:
    from .episode_record import EpisodeRecord

__all__ = ["Judge", "RecordJudge", "judge_key"]


class RecordJudge(Protocol):
    """A judge that needs no model: ``model`` names it in verdicts and listings,
    ``verdict_key`` is the :attr:`Verdict.key` of the verdicts it gives, and
    :meth:`verdict` rates a complete episode's record (raising
    :class:`~sotopia_are.record.NotRatableError` for another)."""

    @property
    def model(self) -> str: ...

    @property
    def verdict_key(self) -> str: ...

    async def verdict(self, record: EpisodeRecord) -> Verdict: ...


Judge = LLMJudge | RecordJudge
"""Any judge the rating path takes."""


def judge_key(judge: Judge) -> str:
    """The :attr:`Verdict.key` of the verdicts ``judge`` gives."""
    if isinstance(judge, LLMJudge):
        return Verdict.key_for(judge)
    return judge.verdict_key
