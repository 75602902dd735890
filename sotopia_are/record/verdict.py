"""`Verdict`: one judge's rating of one episode, as an episode record keeps it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from sotopia_are.evaluation import Evaluation, LLMJudge, TerminationCheck, build_response
from sotopia_are.llm import Sampling
from sotopia_are.messages import ScriptEnvironmentResponse

from .scores import OVERALL, Scores

__all__ = ["Verdict"]


class Verdict(BaseModel):
    """What a judge said of an episode: its :class:`~sotopia_are.evaluation.Evaluation`
    (ratings, failures, warnings and the judge's calls) and the termination check.

    A verdict is identified by :attr:`key` — the judge's model, the rubric and the prompt
    (template name and a hash of its text) — so a record holds one verdict per judge, and
    a second judge adds its own rather than replacing the first. ``sampling`` is the
    judge's (:attr:`LLMJudge.sampling`); None in verdicts written before it was kept, whose
    calls' ``params`` still say what each request sent.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge_model: str
    rubric: str
    prompt: str = ""
    evaluation: Evaluation
    termination_reason: str | None = None
    sampling: Sampling | None = None

    @property
    def key(self) -> str:
        """``judge_model | rubric | prompt``: which judge said it."""
        return self.key_of(self.judge_model, self.rubric, self.prompt)

    @staticmethod
    def key_of(judge_model: str, rubric: str, prompt: str) -> str:
        """The :attr:`key` of a verdict by that judge."""
        return f"{judge_model} | {rubric} | {prompt}"

    @staticmethod
    def key_for(judge: LLMJudge) -> str:
        """The :attr:`key` of the verdicts ``judge`` gives."""
        return Verdict.key_of(judge.model, judge.rubric.name, judge.prompt_version)

    def is_by(self, judge: str) -> bool:
        """Whether ``judge`` names this verdict's judge: its model, or its whole
        :attr:`key`."""
        return self.names_judge(judge, self.judge_model, self.rubric, self.prompt)

    @staticmethod
    def names_judge(judge: str, judge_model: str, rubric: str, prompt: str) -> bool:
        """:meth:`is_by` of a verdict by ``judge_model`` with ``rubric`` and ``prompt``."""
        return judge in (judge_model, Verdict.key_of(judge_model, rubric, prompt))

    @property
    def rated(self) -> bool:
        """Whether at least one judge sample gave valid scores."""
        return not self.evaluation.failed

    @property
    def scores(self) -> Scores:
        """Each rated agent's dimension means (in rubric order) plus ``overall_score``,
        named by this verdict's judge model, rubric and prompt."""
        return Scores(
            (
                (rating.agent, {**rating.scores(), OVERALL: rating.overall})
                for rating in self.evaluation.ratings
            ),
            judge_model=self.judge_model,
            rubric=self.rubric,
            prompt=self.prompt,
        )

    def response(self) -> ScriptEnvironmentResponse:
        """Sotopia's response: rates per agent, the termination and the judge's comments."""
        return build_response(self.evaluation, TerminationCheck(reason=self.termination_reason))
