"""`give_verdict`: a judge's verdict on an episode record, the one way an episode is rated.

A played episode (once its record is made), a stored or imported one and a replayed
script are all rated so: from the record's events, never played again. An LLM judge reads
the omniscient transcript derived from them, with every participant's background and
goal, and calls in scope ``<episode_id>/judge`` of its session with the episode's seed, so
a replay answers each episode with its own recorded answers; a
:class:`~sotopia_are.record.RecordJudge` (a game's rules) computes its verdict from the
record itself.
"""

from __future__ import annotations

from sotopia_are.evaluation import LLMJudge, episode_judge_warnings, termination_check
from sotopia_are.social import EpisodeStatus, TerminationRule

from .episode_record import EpisodeRecord, NotRatableError
from .judges import Judge
from .verdict import Verdict

__all__ = ["check_ratable", "give_verdict"]


def check_ratable(record: EpisodeRecord) -> None:
    """:class:`NotRatableError` (a ``ValueError``) unless ``record``'s episode completed:
    a failed or interrupted episode is not rated."""
    if record.status is not EpisodeStatus.COMPLETE:
        raise NotRatableError(
            f"episode {record.episode_id} is {record.status.value}, not complete: only a "
            "finished episode can be rated"
        )


async def give_verdict(
    record: EpisodeRecord, judge: Judge, *, termination: TerminationRule | None = None
) -> Verdict:
    """``judge``'s verdict on ``record``. An :class:`~sotopia_are.evaluation.LLMJudge`'s:
    its ratings (with the :func:`~sotopia_are.evaluation.judge_warnings` they call for)
    and whether ``termination`` ends the conversation (default: the spec's own limits,
    the rule the episode was played by). A :class:`~sotopia_are.record.RecordJudge`'s: what
    its :meth:`~sotopia_are.record.RecordJudge.verdict` computes (``termination`` does
    not apply). A judge that cannot rate gives a verdict without ratings.

    :class:`NotRatableError` for an episode that did not complete (:func:`check_ratable`).
    """
    check_ratable(record)
    if not isinstance(judge, LLMJudge):
        return await judge.verdict(record)
    evaluation = await judge.evaluate(
        record.spec.background(),
        record.transcript(),
        session=judge.session.scoped(f"{record.episode_id}/judge"),
        episode_seed=record.spec.seed,
    )
    warnings = episode_judge_warnings(evaluation, record)
    return Verdict(
        judge_model=judge.model,
        rubric=judge.rubric.name,
        prompt=judge.prompt_version,
        evaluation=evaluation.model_copy(update={"warnings": warnings}),
        termination_reason=termination_check(record, termination).reason,
        sampling=judge.sampling,
    )
