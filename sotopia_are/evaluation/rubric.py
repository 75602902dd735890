"""Rubrics: the dimensions a judge rates every participant on, and the output model built
from them.

A :class:`Rubric` is data — a list of :class:`Dimension`\\ s (name, integer range,
description) — defined in code or in a JSON file of the same shape as the built-in ones
in ``prompts/rubrics/``. :meth:`Rubric.output_model` turns it into the pydantic model the
judge's answer must validate against: one entry per participant, and in it one
``{"reasoning": str, "score": int}`` per dimension with the score bounded by the range.
The answer is first put into canonical form (:mod:`sotopia_are.evaluation.judge_reply`:
names in another case, ``"7"`` or ``7.0`` for 7, Sotopia's ``[reasoning, score]`` pairs…),
each change noted on the call. Validation is then strict: an out-of-range score, a missing
dimension, a score that is not a whole number (``true``, ``7.5``, ``"high"``) or an entry
the rubric does not have (another participant, another dimension) is a validation error,
which the LLM layer sends back to the model — never clipped, coerced, defaulted or
ignored. The JSON schema states the score ranges, so a server that enforces schemas
while decoding keeps them too, and bounds each reasoning's length
(:data:`REASONING_MAX_CHARS`) so that such a server closes the answer within the judge's
``max_tokens``; a longer reasoning from a server that does not enforce it is accepted.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from sotopia_are import SotopiaAreError
from sotopia_are.llm import packaged_prompts_dir, text_max_chars
from sotopia_are.simulation.data_handler.reader import loads_json

from .judge_reply import normalize_judge_reply

__all__ = [
    "ANSWER_FRAME_TOKENS",
    "GOAL_ONLY",
    "REASONING_MAX_CHARS",
    "SOTOPIA_EVAL",
    "TOKENS_PER_RATING",
    "Dimension",
    "Rubric",
    "RubricError",
    "builtin_rubrics",
]

ANSWER_FRAME_TOKENS = 200
"""The answer budget of a judge's answer beside its ratings: the participants' names, the
braces and white space around them."""

TOKENS_PER_RATING = 160
"""The answer budget of one participant's reasoning and score on one dimension."""

_RATING_FORM_TOKENS = 40
"""What a rating takes beside its reasoning: ``"social_rules": {"reasoning": "",
"score": -10},`` with the line breaks and indentation a model writes around it."""

REASONING_MAX_CHARS = text_max_chars(TOKENS_PER_RATING - _RATING_FORM_TOKENS)
"""The ``maxLength`` of a rating's reasoning in the judge's schema (360): every rating
at its longest still fits :data:`TOKENS_PER_RATING`, so an answer decoded under the
schema closes its JSON within the judge's ``max_tokens``. In the schema only: a longer
reasoning from a server that does not enforce it is accepted."""

_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*\Z")
_RUBRICS_DIR = "rubrics"


class RubricError(SotopiaAreError, ValueError):
    """A rubric file or definition that cannot be used; the message names the fix."""


class Dimension(BaseModel):
    """One rated dimension: an integer score from ``low`` to ``high`` (both included).

    ``name`` is a lower-case identifier (it becomes a JSON key); ``description`` tells
    the judge what the dimension means and what the ends of the range stand for.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    low: int
    high: int
    description: str = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> Dimension:
        if not _IDENTIFIER.match(self.name):
            raise ValueError(
                f"dimension name {self.name!r} must be a lower-case identifier "
                "(letters, digits, underscores; starting with a letter)"
            )
        if self.low >= self.high:
            raise ValueError(
                f"dimension {self.name!r}: low ({self.low}) must be below high ({self.high})"
            )
        return self


class Rubric(BaseModel):
    """A named list of dimensions (at least one, distinct names), in rating order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""
    dimensions: tuple[Dimension, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _distinct_names(self) -> Rubric:
        names = self.dimension_names
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"dimension names must be distinct; repeated: {duplicates}")
        return self

    @property
    def dimension_names(self) -> list[str]:
        """The dimensions' names, in order."""
        return [d.name for d in self.dimensions]

    @classmethod
    def from_file(cls, path: Path | str) -> Rubric:
        """Read a rubric from a JSON file (``{"name", "description"?, "dimensions": [...]}``).

        Raises :class:`RubricError` naming the file and every problem in it.
        """
        path = Path(path)
        try:
            data: Any = loads_json(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise RubricError(f"cannot read rubric file {path}: {exc.strerror}") from exc
        except json.JSONDecodeError as exc:
            raise RubricError(
                f"rubric file {path}: invalid JSON at line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg}"
            ) from exc
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
                for e in exc.errors()
            )
            raise RubricError(f"rubric file {path}: {problems}") from exc

    @classmethod
    def load(cls, source: Path | str) -> Rubric:
        """A built-in rubric by name (see :func:`builtin_rubrics`) or a rubric file's path."""
        builtin = _builtin_path(str(source))
        if isinstance(source, str) and builtin.is_file():
            return cls.from_file(builtin)
        path = Path(source)
        if path.is_file():
            return cls.from_file(path)
        raise RubricError(
            f"no rubric {str(source)!r}: give a rubric file's path or one of the built-in "
            f"rubrics {builtin_rubrics()}"
        )

    def output_model(self, agent_names: Sequence[str]) -> type[BaseModel]:
        """The model a judge's answer must validate against, for these participants.

        Its JSON keys are the participants' names (in order); each holds one
        ``{"reasoning", "score"}`` object per dimension, reasoning first so the model
        thinks before it scores. The same rubric and names give the same model.
        """
        return _output_model(self, tuple(agent_names))


# Entries the rubric does not define are errors, not ignored: an answer rating someone or
# something else is a misunderstanding the model must be told about.
_STRICT = ConfigDict(extra="forbid")


class _JudgeAnswer(BaseModel):
    """A judge's whole answer: normalised in form (see ``judge_reply``), then validated."""

    model_config = _STRICT

    agent_names: ClassVar[tuple[str, ...]] = ()
    dimension_names: ClassVar[tuple[str, ...]] = ()
    # Left aside when a smaller max_tokens cuts the reasonings' bounds (llm.structured).
    answer_form_tokens: ClassVar[int] = ANSWER_FRAME_TOKENS

    @classmethod
    def normalize_reply(cls, data: Any) -> tuple[Any, list[str]]:
        return normalize_judge_reply(data, cls.agent_names, cls.dimension_names)


# Cached: building the models costs milliseconds, and a judge asks for the same one for
# every episode of a batch (which also lets the LLM layer's schema cache hit).
@functools.lru_cache(maxsize=256)
def _output_model(rubric: Rubric, agent_names: tuple[str, ...]) -> type[BaseModel]:
    ratings: dict[str, Any] = {
        d.name: (
            _rating_model(d),
            # The rubric text lives in the prompt; the schema only repeats the range.
            Field(description=f"{d.name}: {d.low} to {d.high}, as the rubric defines it"),
        )
        for d in rubric.dimensions
    }
    per_agent: type[BaseModel] = create_model(
        f"{_camel(rubric.name)}Ratings", __config__=_STRICT, **ratings
    )
    # Participant names are arbitrary text, so they are aliases of positional fields.
    fields: dict[str, Any] = {
        f"agent_{index}": (per_agent, Field(alias=name, description=f"the ratings of {name}"))
        for index, name in enumerate(agent_names, start=1)
    }
    model: type[_JudgeAnswer] = create_model(
        f"{_camel(rubric.name)}Evaluation", __base__=_JudgeAnswer, **fields
    )
    model.agent_names = agent_names
    model.dimension_names = tuple(rubric.dimension_names)
    ratings_count = len(agent_names) * len(rubric.dimensions)
    model.answer_form_tokens = ANSWER_FRAME_TOKENS + _RATING_FORM_TOKENS * ratings_count
    return model


def _rating_model(dimension: Dimension) -> type[BaseModel]:
    model: type[BaseModel] = create_model(
        f"{_camel(dimension.name)}Rating",
        __config__=_STRICT,
        reasoning=(
            str,
            Field(
                description="why this score: evidence from the interaction",
                json_schema_extra={"maxLength": REASONING_MAX_CHARS},
            ),
        ),
        score=(
            int,
            Field(
                # Strict: true is not 1, "7" and 7.0 are not 7 (JSON integers still pass).
                strict=True,
                ge=dimension.low,
                le=dimension.high,
                description=f"an integer from {dimension.low} to {dimension.high}",
            ),
        ),
    )
    return model


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", name) if part)


def _builtin_path(name: str) -> Path:
    return packaged_prompts_dir() / _RUBRICS_DIR / f"{name}.json"


def builtin_rubrics() -> list[str]:
    """The names of the rubrics shipped in ``prompts/rubrics/``."""
    return sorted(p.stem for p in (packaged_prompts_dir() / _RUBRICS_DIR).glob("*.json"))


SOTOPIA_EVAL: Rubric = Rubric.from_file(_builtin_path("sotopia_eval"))
"""The seven SOTOPIA-Eval dimensions: believability 0..10, relationship -5..5, knowledge
0..10, secret -10..0, social_rules -10..0, financial_and_material_benefits -5..5, goal
0..10."""

GOAL_ONLY: Rubric = Rubric.from_file(_builtin_path("goal_only"))
"""Goal completion alone, 0..10."""
