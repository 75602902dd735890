"""Evaluating social goals: rule-based termination, the LLM judge, rubrics, the
``ScriptEnvironmentResponse`` built from them, and evaluation of whole episodes and
human-written scripts.

The judge is omniscient by design (DESIGN.md, rule 4): it reads every action of an
episode, private ones included and marked as private.
"""

from .episode import (
    EvaluatedEpisode,
    ScriptedAgents,
    evaluate_episode,
    evaluate_script,
    run_evaluated_episode,
)
from .judge import JUDGE_TEMPLATE, LLMJudge
from .response import build_response
from .result import AgentRating, DimensionScore, Evaluation, JudgeFailure
from .rubric import GOAL_ONLY, SOTOPIA_EVAL, Dimension, Rubric, RubricError, builtin_rubrics
from .termination import RuleBasedTerminatedEvaluator, SotopiaEvaluatorOutput, TerminationCheck

__all__ = [
    "GOAL_ONLY",
    "JUDGE_TEMPLATE",
    "SOTOPIA_EVAL",
    "AgentRating",
    "Dimension",
    "DimensionScore",
    "EvaluatedEpisode",
    "Evaluation",
    "JudgeFailure",
    "LLMJudge",
    "Rubric",
    "RubricError",
    "RuleBasedTerminatedEvaluator",
    "ScriptedAgents",
    "SotopiaEvaluatorOutput",
    "TerminationCheck",
    "build_response",
    "builtin_rubrics",
    "evaluate_episode",
    "evaluate_script",
    "run_evaluated_episode",
]
