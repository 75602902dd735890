"""Turn a termination check and a judge's :class:`Evaluation` into Sotopia's
``ScriptEnvironmentResponse`` (the role of Sotopia's ``unweighted_aggregate_evaluate``).

Each participant's rate is ``(overall, {dimension: mean score})`` under its name, in
participant order, so ``p1_rate``/``p2_rate`` read the first two; ``overall`` is the
unweighted mean of the dimension scores. A participant the judge could not rate gets
``None`` (no rating), never a 0. ``comments`` hold the termination reasons, any judge
failures and warnings, and the judge's reasoning per participant and dimension.
"""

from __future__ import annotations

from sotopia_are.messages import Rate, ScriptEnvironmentResponse

from .result import Evaluation
from .termination import TerminationCheck

__all__ = ["build_response"]


def build_response(
    evaluation: Evaluation | None = None, termination: TerminationCheck | None = None
) -> ScriptEnvironmentResponse:
    """The response for an episode: ``terminated`` from ``termination`` (False without
    one), rates and comments from ``evaluation`` (no rates without one)."""
    rates: dict[str, Rate] = {}
    sections: list[str] = []
    if termination is not None and termination.reason is not None:
        sections.append(f"Environment comments: {termination.reason}")
    if evaluation is not None:
        by_agent = {rating.agent: rating for rating in evaluation.ratings}
        for name in evaluation.agent_names:
            rating = by_agent.get(name)
            rates[name] = None if rating is None else (rating.overall, rating.scores())
        if evaluation.failures:
            sections.append(_failure_comment(evaluation))
        if evaluation.warnings:
            sections.append("\n".join(["Judge warnings:", *evaluation.warnings]))
        sections.extend(rating.comment() for rating in evaluation.ratings)
    return ScriptEnvironmentResponse(
        terminated=termination.terminated if termination is not None else False,
        rates=rates,
        comments="\n".join(sections) or None,
    )


def _failure_comment(evaluation: Evaluation) -> str:
    failed = len(evaluation.failures)
    lines = [
        f"Judge failures: {failed} of {evaluation.samples} samples gave no valid rating"
        + ("; there are no scores." if evaluation.failed else "; scores use the others.")
    ]
    lines += [f"sample {f.sample}: {f.error_type}: {f.error}" for f in evaluation.failures]
    return "\n".join(lines)
