"""Evaluating episodes end to end: a finished episode, an episode run with its
evaluators, and a human-written script (parse → replay → judge).

Evaluators take part in an episode in two places: the :class:`RuleBasedTerminatedEvaluator`
is one of the runner's termination rules, checked before every turn; the
:class:`LLMJudge` rates the finished episode. :class:`EvaluatedEpisode` holds the episode,
both verdicts and the ``ScriptEnvironmentResponse`` made of them.

``evaluation`` may not import ``agents`` (DESIGN.md, layers), so replaying a script takes
the scripted-agent factory as a parameter — pass ``ScriptedAgent.from_script``. The CLI
(which may import anything) wires the two together.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sotopia_are.llm import LLMSession, Usage
from sotopia_are.messages import ScriptBackground, ScriptEnvironmentResponse, ScriptInteraction
from sotopia_are.social import (
    EpisodeResult,
    EpisodeSpec,
    EpisodeStatus,
    Sink,
    SocialAgent,
    run_episode,
    script_spec,
)

from .judge import LLMJudge
from .response import build_response
from .result import Evaluation
from .sanity import episode_judge_warnings
from .termination import RuleBasedTerminatedEvaluator, TerminationCheck

__all__ = [
    "EvaluatedEpisode",
    "ScriptedAgents",
    "evaluate_episode",
    "evaluate_script",
    "run_evaluated_episode",
]

ScriptedAgents = Callable[[str, Sequence[str]], Sequence[SocialAgent] | Mapping[str, SocialAgent]]
"""Makes the agents that replay a script: ``(script text, participant names) -> agents``,
e.g. ``sotopia_are.agents.ScriptedAgent.from_script``."""


@dataclass(frozen=True)
class EvaluatedEpisode:
    """An episode with its termination check, the judge's evaluation and the response.

    ``evaluation`` is None when the episode failed (an agent raised or broke the rules):
    a broken episode is not rated, and every participant's rate is None.
    """

    episode: EpisodeResult
    termination: TerminationCheck
    evaluation: Evaluation | None
    response: ScriptEnvironmentResponse

    @property
    def usage(self) -> Usage:
        """The totals of every model call of the episode: the agents' and the judge's."""
        judge_calls = self.evaluation.calls if self.evaluation is not None else []
        agent_calls = [call for calls in self.episode.call_records.values() for call in calls]
        return Usage.of([*agent_calls, *judge_calls])


async def evaluate_episode(
    episode: EpisodeResult,
    judge: LLMJudge,
    *,
    termination: RuleBasedTerminatedEvaluator | None = None,
    session: LLMSession | None = None,
) -> EvaluatedEpisode:
    """Check and rate a finished (or stored, re-imported) episode; the evaluation carries
    the :func:`~sotopia_are.evaluation.judge_warnings` of its verdict.

    ``termination`` defaults to the spec's own limits (``max_turns``,
    ``max_stale_turns``); ``session`` replaces the judge's for this episode (by default
    the judge calls in scope ``"<episode_id>/judge"`` of its own session).
    """
    rule = termination or RuleBasedTerminatedEvaluator(
        episode.spec.max_turns, episode.spec.max_stale_turns
    )
    check = rule.check_episode(episode)
    if episode.status is EpisodeStatus.FAILED:
        response = ScriptEnvironmentResponse(
            terminated=True,
            rates=dict.fromkeys(episode.spec.agent_names),
            comments=f"The episode failed and was not rated: {episode.reason}",
        )
        return EvaluatedEpisode(episode, check, None, response)
    evaluation = await judge.evaluate_episode(episode, session=session)
    warnings = episode_judge_warnings(evaluation, episode)
    if warnings:
        evaluation = evaluation.model_copy(update={"warnings": warnings})
    return EvaluatedEpisode(episode, check, evaluation, build_response(evaluation, check))


async def run_evaluated_episode(
    spec: EpisodeSpec,
    agents: Sequence[SocialAgent] | Mapping[str, SocialAgent],
    judge: LLMJudge,
    *,
    termination: RuleBasedTerminatedEvaluator | None = None,
    sinks: Sequence[Sink] = (),
    session: LLMSession | None = None,
) -> EvaluatedEpisode:
    """Run an episode with ``termination`` as its termination rule, then rate it.

    ``termination`` defaults to ``RuleBasedTerminatedEvaluator(spec.max_turns,
    spec.max_stale_turns)``.
    """
    rule = termination or RuleBasedTerminatedEvaluator(spec.max_turns, spec.max_stale_turns)
    episode = await run_episode(spec, agents, sinks=sinks, termination_rules=[rule])
    return await evaluate_episode(episode, judge, termination=rule, session=session)


async def evaluate_script(
    script: str | ScriptInteraction,
    context: EpisodeSpec | ScriptBackground,
    judge: LLMJudge,
    scripted_agents: ScriptedAgents,
    *,
    termination: RuleBasedTerminatedEvaluator | None = None,
    episode_id: str = "script",
    session: LLMSession | None = None,
) -> EvaluatedEpisode:
    """Parse a human-written script, replay it through the runner, and rate it.

    ``context`` gives the scenario, participants, backgrounds and goals (an
    :class:`EpisodeSpec`, or a :class:`ScriptBackground` made into one with
    ``episode_id``). Each action of the script is one turn, played by its speaker, and
    the replay ends with the script. ``termination`` (Sotopia's defaults, 20 turns and 2
    stale turns, when None) then says whether the conversation had ended. Raises
    :class:`~sotopia_are.messages.ScriptParseError` for an unreadable script.
    """
    text = script.interactions if isinstance(script, ScriptInteraction) else script
    base = (
        context
        if isinstance(context, EpisodeSpec)
        else EpisodeSpec.from_background(context, episode_id)
    )
    spec = script_spec(base, text)
    episode = await run_episode(spec, scripted_agents(text, spec.agent_names))
    return await evaluate_episode(
        episode, judge, termination=termination or RuleBasedTerminatedEvaluator(), session=session
    )
