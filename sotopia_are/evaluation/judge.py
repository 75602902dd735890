"""The LLM judge: rates every participant of an episode on a rubric's dimensions.

It plays the role of Sotopia's ``ReachGoalLLMEvaluator``. The prompt is the Jinja2
template ``prompts/judge_sotopia_eval.j2`` (any rubric fits it); the answer is parsed
through the LLM layer into the model :meth:`Rubric.output_model` builds, so an
out-of-range score, a missing dimension or malformed JSON is sent back to the model with
the error and asked again, up to ``LLMConfig.output_attempts`` answers. A sample that
still has no valid answer is recorded as a :class:`JudgeFailure` with every raw answer.

The judge is omniscient by design (DESIGN.md, rule 4): it reads the whole log,
including private actions, which the transcript marks as private.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from sotopia_are.llm import (
    DEFAULT_JUDGE_SAMPLING,
    GenerationError,
    LLMCall,
    LLMConfig,
    LLMSession,
    Sampling,
    TransientLLMError,
)
from sotopia_are.llm.errors import RequestRejectedError
from sotopia_are.messages import ScriptBackground

from .result import AgentRating, DimensionScore, Evaluation, JudgeFailure
from .rubric import ANSWER_FRAME_TOKENS, SOTOPIA_EVAL, TOKENS_PER_RATING, Rubric

__all__ = ["JUDGE_TEMPLATE", "TOKENS_PER_RATING", "LLMJudge"]

JUDGE_TEMPLATE = "judge_sotopia_eval.j2"
"""The packaged judge prompt; its variables are listed at the top of the file."""

# Failures of the model's answers, of a provider that never answered (or answered
# garbage), and of a request the server refused (a transcript longer than the judge's
# context) are part of an evaluation's result: they concern this episode only.
# Configuration errors (bad key, unknown model, broken template, replay miss) are raised,
# since no rerun would fix them and every other episode would fail alike.
_RECORDED_FAILURES = (GenerationError, TransientLLMError, RequestRejectedError)


class LLMJudge:
    """Rates each participant on ``rubric`` with ``model``, ``samples`` times.

    ``sampling`` is sent with every call, over the session config's ``params``; by default
    :data:`DEFAULT_JUDGE_SAMPLING` (temperature 0, the rest the provider's), while
    ``Sampling()`` leaves every setting to the provider. Its ``max_tokens``, if set,
    replaces the judge's own budget (:meth:`max_tokens`). ``samples`` independent calls
    run concurrently; each dimension reports the mean and the spread of the valid samples
    (see :class:`DimensionScore`).
    Repeated samples only differ if the model samples (a ``sampling`` temperature above
    0) and no response cache answers the repeats. With a sampling ``seed`` (a study's),
    sample *n* of an episode sends the seed drawn from it, the episode's seed and *n*
    (``Sampling.params``): the samples draw differently, a rerun draws alike. With more
    than one sample, sample *n* calls in scope ``sample-<n>`` (under the session's), so a
    replay gives every sample its own recorded answer even when all send the same request
    (no seed). ``session`` defaults to a
    fresh :class:`LLMSession` on ``config``; ``template`` names another judge prompt
    taking the same variables.

    Example:
        ```python
        judge = LLMJudge("gpt-4o")                                  # SOTOPIA-Eval, once
        goal = LLMJudge("openai/qwen", rubric=GOAL_ONLY, samples=3,
                        config=LLMConfig(api_base="http://localhost:8000/v1"))
        record = sa.rate(record, goal, store=store)
        ```
    """

    def __init__(
        self,
        model: str,
        rubric: Rubric = SOTOPIA_EVAL,
        *,
        samples: int = 1,
        session: LLMSession | None = None,
        config: LLMConfig | None = None,
        sampling: Sampling | None = None,
        template: str = JUDGE_TEMPLATE,
    ) -> None:
        if samples < 1:
            raise ValueError(f"samples must be at least 1, got {samples}")
        if session is not None and config is not None:
            raise ValueError("give the judge a session or a config, not both")
        self.model = model
        self.rubric = rubric
        self.samples = samples
        self.session = session or LLMSession(config)
        self.sampling = DEFAULT_JUDGE_SAMPLING if sampling is None else sampling
        self.template = template

    def __repr__(self) -> str:
        return (
            f"LLMJudge(model={self.model!r}, rubric={self.rubric.name!r}, "
            f"samples={self.samples}, sampling={str(self.sampling)!r})"
        )

    @functools.cached_property
    def prompt_version(self) -> str:
        """The judge's prompt as ``template@hash`` (see ``PromptLibrary.version``); read
        once, not for every episode rated."""
        return self.session.prompts.version(self.template)

    def max_tokens(self, participants: int) -> int:
        """The answer budget for rating ``participants`` (unless :attr:`sampling` or the
        session's config give one): room for a reasoning and a score per participant and
        dimension."""
        return ANSWER_FRAME_TOKENS + TOKENS_PER_RATING * participants * len(self.rubric.dimensions)

    def variables(self, background: ScriptBackground, transcript: str) -> dict[str, Any]:
        """The template variables for an episode with ``background`` and ``transcript``."""
        return {
            "scenario": background.scenario,
            "agents": [
                {"name": name, "background": text, "goal": goal}
                for name, text, goal in zip(
                    background.agent_names,
                    background.agent_backgrounds,
                    background.agent_goals,
                    strict=True,
                )
            ],
            "transcript": transcript,
            "rubric": self.rubric,
            "dimensions": list(self.rubric.dimensions),
        }

    async def evaluate(
        self,
        background: ScriptBackground,
        transcript: str,
        *,
        session: LLMSession | None = None,
        episode_seed: int = 0,
    ) -> Evaluation:
        """Rate every participant of ``background`` from the omniscient ``transcript``.

        ``session`` (e.g. an episode's scoped session) replaces the judge's own for this
        call, so the judge's calls are accounted with the episode's; ``episode_seed`` (the
        episode's ``EpisodeSpec.seed``) goes into the requests' seeds (see the class).
        """
        names = list(background.agent_names)
        output_type = self.rubric.output_model(names)
        variables = self.variables(background, transcript)
        use = session or self.session
        if self.samples == 1:
            # The default: one call, without the task a gather makes for it.
            outcomes = [await self._sample(use, variables, output_type, ("judge", episode_seed, 1))]
        else:
            outcomes = await asyncio.gather(
                *(
                    self._sample(
                        use.scoped(f"sample-{number}"),
                        variables,
                        output_type,
                        ("judge", episode_seed, number),
                    )
                    for number in range(1, self.samples + 1)
                )
            )
        answers = [value for value, _call in outcomes if not isinstance(value, JudgeFailure)]
        return Evaluation(
            rubric=self.rubric.name,
            model=self.model,
            agent_names=names,
            samples=self.samples,
            valid_samples=len(answers),
            ratings=self._ratings(names, answers) if answers else [],
            failures=[value for value, _call in outcomes if isinstance(value, JudgeFailure)],
            calls=[call for _value, call in outcomes if call is not None],
        )

    async def _sample(
        self,
        session: LLMSession,
        variables: Mapping[str, Any],
        output_type: type[BaseModel],
        draw: tuple[str, int, int],
    ) -> tuple[BaseModel | JudgeFailure, LLMCall | None]:
        """One judge call (sample ``draw[-1]``, its seed drawn with ``draw``): the
        validated answer or the failure, and the call's record."""
        try:
            generation = await session.generate(
                self.model,
                self.template,
                variables,
                output_type,
                params=self.sampling.params(*draw),
                max_tokens=self.max_tokens(len(variables["agents"])),
            )
        except _RECORDED_FAILURES as exc:
            failure = JudgeFailure(
                sample=draw[-1],
                error_type=type(exc).__name__,
                error=str(exc),
                attempts=exc.call.attempts if exc.call is not None else [],
            )
            return failure, exc.call
        return generation.value, generation.call

    def _ratings(self, names: list[str], answers: list[BaseModel]) -> list[AgentRating]:
        own = type(self.rubric).output_model is Rubric.output_model
        read = [_fields_of_own_answer(a) if own else a.model_dump() for a in answers]
        # The rubric's dimensions read once, not once per participant.
        ranges = [(d.name, d.low, d.high) for d in self.rubric.dimensions]
        ratings = []
        for index, name in enumerate(names, start=1):
            per_sample = [answer[f"agent_{index}"] for answer in read]
            # Scores and reasonings of validated answers, the rubric's dimension.
            dimensions = [
                DimensionScore.of_valid_scores(
                    dimension,
                    low,
                    high,
                    [sample[dimension]["score"] for sample in per_sample],
                    [sample[dimension]["reasoning"] for sample in per_sample],
                )
                for dimension, low, high in ranges
            ]
            ratings.append(AgentRating.of_valid_scores(name, dimensions))
        return ratings


def _fields_of_own_answer(answer: BaseModel) -> dict[str, dict[str, dict[str, Any]]]:
    """What ``answer.model_dump()`` gives for an answer of the rubric's own answer model
    (a field per participant, of a field per dimension, of a str reasoning and a strict
    int score), read from the validated fields: the very objects, without the dump."""
    return {
        agent: {dimension: rating.__dict__ for dimension, rating in fields.__dict__.items()}
        for agent, fields in answer.__dict__.items()
    }
