"""Evaluating social goals: rule-based termination, the LLM judge, rubrics, the
``ScriptEnvironmentResponse`` built from them. An episode is rated from its record
(:func:`sotopia_are.record.give_verdict`): played, stored and scripted alike.

The judge is omniscient by design (DESIGN.md, rule 4): it reads every action of an
episode, private ones included and marked as private.
"""

from .judge import JUDGE_TEMPLATE, LLMJudge
from .judge_reply import normalize_judge_reply
from .response import build_response
from .result import AgentRating, DimensionScore, Evaluation, JudgeFailure
from .rubric import (
    GOAL_ONLY,
    REASONING_MAX_CHARS,
    SOTOPIA_EVAL,
    Dimension,
    Rubric,
    RubricError,
    builtin_rubrics,
)
from .sanity import GOAL_DIMENSION, episode_judge_warnings, judge_warnings
from .termination import (
    PlayedEpisode,
    RuleBasedTerminatedEvaluator,
    SotopiaEvaluatorOutput,
    TerminationCheck,
    termination_check,
)

__all__ = [
    "GOAL_DIMENSION",
    "GOAL_ONLY",
    "JUDGE_TEMPLATE",
    "REASONING_MAX_CHARS",
    "SOTOPIA_EVAL",
    "AgentRating",
    "Dimension",
    "DimensionScore",
    "Evaluation",
    "JudgeFailure",
    "LLMJudge",
    "PlayedEpisode",
    "Rubric",
    "RubricError",
    "RuleBasedTerminatedEvaluator",
    "SotopiaEvaluatorOutput",
    "TerminationCheck",
    "build_response",
    "builtin_rubrics",
    "episode_judge_warnings",
    "judge_warnings",
    "normalize_judge_reply",
    "termination_check",
]
