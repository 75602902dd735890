"""`Scores`: a verdict's numbers together with the judge and rubric they came from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["OVERALL", "Scores"]

OVERALL = "overall_score"
"""The key of an agent's unweighted mean of its dimension means."""


class Scores(dict[str, dict[str, float]]):
    """Each rated agent's dimension means, in rubric order, then ``overall_score`` — and
    where they came from: ``judge_model``, ``rubric`` and ``prompt`` of the verdict.

    A plain ``dict`` for reading (``scores["Ada"]["goal"]``, ``json.dumps``), so code
    that indexes scores keeps working; the source travels with the numbers, so nothing
    shows a score without being able to say whose it is. Empty (and without a source)
    when the episode is unrated. Two ``Scores`` are equal when their numbers and their
    sources are.
    """

    __slots__ = ("judge_model", "prompt", "rubric")

    def __init__(
        self,
        scores: Mapping[str, Mapping[str, float]] | Iterable[tuple[str, Mapping[str, float]]] = (),
        *,
        judge_model: str = "",
        rubric: str = "",
        prompt: str = "",
    ) -> None:
        items = scores.items() if isinstance(scores, Mapping) else scores
        super().__init__((agent, dict(dimensions)) for agent, dimensions in items)
        self.judge_model = judge_model
        self.rubric = rubric
        self.prompt = prompt

    @property
    def source(self) -> str:
        """``judge MODEL, rubric NAME`` (``unrated`` when there are no scores)."""
        if not self and not self.judge_model:
            return "unrated"
        return f"judge {self.judge_model}, rubric {self.rubric}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Scores) and (
            (self.judge_model, self.rubric, self.prompt)
            != (other.judge_model, other.rubric, other.prompt)
        ):
            return False
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # mutable, as every dict

    def __repr__(self) -> str:
        return (
            f"Scores({dict.__repr__(self)}, judge_model={self.judge_model!r}, "
            f"rubric={self.rubric!r}, prompt={self.prompt!r})"
        )

    def __reduce__(self) -> tuple[object, ...]:
        # dict's own pickling drops slot attributes: rebuild from the constructor.
        return (
            _rebuild,
            (dict(self), self.judge_model, self.rubric, self.prompt),
        )


def _rebuild(
    scores: dict[str, dict[str, float]], judge_model: str, rubric: str, prompt: str
) -> Scores:
    return Scores(scores, judge_model=judge_model, rubric=rubric, prompt=prompt)
