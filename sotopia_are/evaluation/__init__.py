"""Evaluating social goals: rule-based termination, the LLM judge, rubrics, and the
``ScriptEnvironmentResponse`` built from them.

The judge is omniscient by design (DESIGN.md, rule 4): it reads every action of an
episode, private ones included and marked as private.
"""

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
    "Evaluation",
    "JudgeFailure",
    "LLMJudge",
    "Rubric",
    "RubricError",
    "RuleBasedTerminatedEvaluator",
    "SotopiaEvaluatorOutput",
    "TerminationCheck",
    "build_response",
    "builtin_rubrics",
]
