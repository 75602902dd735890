"""Checks of a judge's verdict against what happened: numbers a study should not trust.

A valid answer can still be a bad one. Small judges were seen to give 10/10 goal to an
agent that did nothing all episode, and to copy one participant's ratings to the other.
:func:`judge_warnings` flags such verdicts; the scores are kept as given (the judge said
them) and the warnings travel with them, so a report can count or exclude them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sotopia_are.messages import AgentAction

from .result import AgentRating, Evaluation
from .termination import PlayedEpisode

__all__ = ["GOAL_DIMENSION", "episode_judge_warnings", "judge_warnings"]

GOAL_DIMENSION = "goal"
"""The dimension whose high scores need the agent to have done something."""

# Doing nothing and leaving are not attempts at a goal; anything else is.
_PASSIVE = frozenset({"none", "leave"})


def judge_warnings(
    evaluation: Evaluation, actions: Mapping[str, Sequence[AgentAction]]
) -> list[str]:
    """What is suspicious in ``evaluation`` given each participant's ``actions``:

    - a goal score above the middle of its range for a participant who never spoke, acted
      or gestured;
    - every participant rated identically, scores and reasoning alike (with two or more).
    """
    warnings: list[str] = []
    for rating in evaluation.ratings:
        goal = rating.dimensions.get(GOAL_DIMENSION)
        if goal is None:
            continue
        # Asked only for a goal above the middle, so most ratings skip the scan of the
        # participant's actions.
        if goal.mean > (goal.low + goal.high) / 2 and not any(
            a.action_type not in _PASSIVE for a in actions.get(rating.agent, ())
        ):
            warnings.append(
                f"{rating.agent} never spoke or acted, yet the judge gave goal "
                f"{goal.mean:g} (range {goal.low} to {goal.high})"
            )
    if len(evaluation.ratings) > 1 and _all_identical(evaluation.ratings):
        warnings.append(
            "the judge gave every participant the same scores and the same reasoning on "
            "every dimension"
        )
    return warnings


def episode_judge_warnings(evaluation: Evaluation, episode: PlayedEpisode) -> list[str]:
    """:func:`judge_warnings` of ``evaluation`` given what each participant of
    ``episode`` did."""
    actions: dict[str, list[AgentAction]] = {name: [] for name in episode.spec.agent_names}
    for agent, action in episode.actions():
        actions[agent].append(action)
    return judge_warnings(evaluation, actions)


def _all_identical(ratings: Sequence[AgentRating]) -> bool:
    """Whether every rating has the first's dimensions, in its order, with its scores and
    reasonings; stops at the first difference (usually the first dimension's)."""
    first = ratings[0].dimensions
    for rating in ratings[1:]:
        dimensions = rating.dimensions
        if len(dimensions) != len(first):
            return False
        for (name, d), (first_name, f) in zip(dimensions.items(), first.items(), strict=True):
            if name != first_name or d.scores != f.scores or d.reasonings != f.reasonings:
                return False
    return True
