"""How a judge's JSON answer is put into canonical form before it is validated.

The same spirit as the agents' answers (:mod:`sotopia_are.agents.action_reply`): lenient
in form, strict in content. :func:`normalize_judge_reply` changes only form, and notes
each change on the call record:

- a participant's key is matched exactly, else ignoring case, else by a unique first name;
- a dimension's key is matched ignoring case, spaces and ``-`` (``"Social Rules"`` is
  ``social_rules``);
- with a one-dimension rubric, a rating written straight under the participant
  (``{"Ann": {"reasoning": …, "score": 7}}``) is that dimension's;
- a rating written as Sotopia's pair ``["reasoning", score]`` becomes
  ``{"reasoning": …, "score": …}``; ``"reason"``, ``"explanation"`` or ``"rationale"``
  stand for a missing ``"reasoning"``;
- a score written as an integer in text (``"7"``, ``"+3"``) or as a whole float (``7.0``)
  is that integer;
- an answer wrapped in one outer object whose keys are none of the participants
  (``{"evaluation": {...}}``) is unwrapped.

Everything else stays for validation to refuse and the model to be asked again: a score
out of range or not whole (``7.5``, ``true``, ``"high"``), a missing participant or
dimension, one the rubric does not have. Each of those breaks the schema sent
(:meth:`~sotopia_are.evaluation.rubric.Rubric.output_model`), so every answer that
satisfies it is accepted, as the rule in ``docs/structured-output.md`` asks.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from sotopia_are.messages import match_participant

__all__ = ["normalize_judge_reply"]

_REASONING_ALIASES = ("reason", "explanation", "rationale")
_INTEGER_TEXT = re.compile(r"\s*([+-]?\d+)\s*\Z")


def normalize_judge_reply(
    data: Any, agent_names: Sequence[str], dimension_names: Sequence[str]
) -> tuple[Any, list[str]]:
    """``data`` (a judge's parsed JSON) in canonical form, and one note per change.

    Anything that is not a JSON object is returned as is, for validation to refuse.
    """
    if not isinstance(data, dict):
        return data, []
    notes: list[str] = []
    data = _unwrapped(data, agent_names, notes)
    answer: dict[str, Any] = {}
    for key, ratings in data.items():
        name = match_participant(key, agent_names)
        if name is not None and name != key and name not in data:
            notes.append(f"read participant {key!r} as {name!r}")
            key = name
        answer[key] = (
            _normalize_ratings(ratings, key, dimension_names, notes)
            if key in agent_names and isinstance(ratings, dict)
            else ratings
        )
    return answer, notes


def _unwrapped(
    data: dict[str, Any], agent_names: Sequence[str], notes: list[str]
) -> dict[str, Any]:
    if len(data) == 1:
        [(key, inner)] = data.items()
        if (
            isinstance(inner, dict)
            and match_participant(key, agent_names) is None
            and any(match_participant(k, agent_names) is not None for k in inner)
        ):
            notes.append(f"unwrapped the ratings from {key!r}")
            return inner
    return data


def _dimension_key(written: str, dimension_names: Sequence[str]) -> str:
    canonical = _canonical_dimension(written)
    return canonical if canonical in dimension_names else written


_SEPARATORS = re.compile(r"[\s\-]+")


@functools.lru_cache(maxsize=1024)  # every key of every rating; the same few recur
def _canonical_dimension(written: str) -> str:
    return _SEPARATORS.sub("_", written.strip()).lower()


def _normalize_ratings(
    ratings: dict[str, Any], agent: str, dimension_names: Sequence[str], notes: list[str]
) -> dict[str, Any]:
    if len(dimension_names) == 1 and "score" in ratings and dimension_names[0] not in ratings:
        # With one dimension, a rating written straight under the participant can only be
        # that dimension's (a real 0.5B judge answered a goal-only rubric this way).
        notes.append(f"read the rating of {agent!r} as its only dimension {dimension_names[0]!r}")
        ratings = {dimension_names[0]: ratings}
    result: dict[str, Any] = {}
    for key, rating in ratings.items():
        dimension = _dimension_key(key, dimension_names)
        if dimension != key and dimension not in ratings:
            notes.append(f"read dimension {key!r} of {agent!r} as {dimension!r}")
            key = dimension
        result[key] = (
            _normalize_rating(rating, agent, key, notes) if key in dimension_names else rating
        )
    return result


def _normalize_rating(rating: Any, agent: str, dimension: str, notes: list[str]) -> Any:
    if (
        isinstance(rating, list)
        and len(rating) == 2
        and isinstance(rating[0], str)
        and not isinstance(rating[1], str | list | dict)
    ):
        notes.append(f"read the pair rating of {agent!r} {dimension} as reasoning and score")
        rating = {"reasoning": rating[0], "score": rating[1]}
    if not isinstance(rating, dict):
        return rating
    # Copied only to be changed: most ratings are in canonical form already.
    if "reasoning" not in rating:
        for alias in _REASONING_ALIASES:
            if isinstance(rating.get(alias), str):
                notes.append(f"read {alias!r} of {agent!r} {dimension} as 'reasoning'")
                rating = dict(rating)
                rating["reasoning"] = rating.pop(alias)
                break
    if "score" in rating and type(rating["score"]) is not int:
        score = _whole_number(rating["score"])
        if score is not None:
            notes.append(f"read score {rating['score']!r} of {agent!r} {dimension} as {score}")
            rating = {**rating, "score": score}
    return rating


def _whole_number(value: Any) -> int | None:
    """``value`` as an int when it is one written as text or as a whole float."""
    if isinstance(value, bool):
        return None  # true is not 1
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and (match := _INTEGER_TEXT.match(value)):
        return int(match.group(1))
    return None
