"""`rate_stored`: one judge's (or a panel's) verdicts on many stored episodes, resumable.

A study re-rates episodes with a second judge or rubric, or a panel of judges at once:
each verdict is added next to the ones before (aggregate them with
:func:`~sotopia_are.studies.panel_scores`). Episodes this judge (model, rubric, prompt
version) already rated are skipped, so a re-rating stopped half way resumes by running it
again; a verdict of this judge whose every sample failed is tried again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import replace as replace_field
from typing import Any

from sotopia_are.llm import apreflight
from sotopia_are.llm.errors import RequestRejectedError
from sotopia_are.record import EpisodeRecord, Judge, judge_key
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import EpisodeStore, StorageError

from .config import StudyConfig
from .errors import StudyInputError
from .preflight import judge_uses
from .rating import arate
from .twins import twin_of
from .workers import fails_every_episode

__all__ = ["RatingOutcome", "arate_stored", "check_to_rate", "rate_stored"]


@dataclass(frozen=True)
class RatingOutcome:
    """What rating one stored episode with one judge (``judge``: its model) came to:
    ``rated`` now, or ``skipped`` (why), or the ``error`` that stopped it (the judge
    failing every sample is not rated, with no error)."""

    episode_id: str
    rated: bool = False
    skipped: str = ""
    error: str = ""
    judge: str = ""


DEFAULT_CONCURRENCY = 8
"""Episodes rated at once unless the caller or its study says how many."""


async def arate_stored(
    store: EpisodeStore,
    episode_ids: Sequence[str],
    judge: Judge | Sequence[Judge] | None = None,
    *,
    concurrency: int | None = None,
    replace: bool = False,
    on_outcome: Callable[[RatingOutcome], None] | None = None,
    preflight: bool = True,
    study: StudyConfig | None = None,
) -> list[RatingOutcome]:
    """Rate each of ``episode_ids`` with ``judge`` (or each of several judges, one
    after another per episode) and store the verdicts, at most ``concurrency`` episodes
    at once (default: the ``study``'s ``concurrency``, else 8); one outcome per id and
    judge, in the order given. Without ``judge``, the ``study``'s judges
    (:meth:`~sotopia_are.studies.StudyConfig.judges`) rate.

    Skipped: episodes not complete, and those this judge already rated (unless
    ``replace``). One episode's error is its outcome and the others go on; an error that
    would fail every episode alike (a rejected key, an unknown model) is raised. Unless
    ``preflight`` is False, every judge's model is checked first
    (:func:`~sotopia_are.llm.apreflight`): a :class:`~sotopia_are.llm.ConfigurationError`
    before any episode is rated.
    """
    if concurrency is None:
        concurrency = (study.concurrency if study else None) or DEFAULT_CONCURRENCY
    if concurrency < 1:
        raise StudyInputError(f"concurrency must be at least 1, got {concurrency}")
    if judge is None and study is not None:
        judge = study.judges()
    judges = list(judge) if isinstance(judge, Sequence) else [judge] if judge else []
    if not judges:
        raise StudyInputError("no judge given")
    if preflight:
        await apreflight(judge_uses(judges))
    gate = asyncio.Semaphore(concurrency)

    async def one(episode_id: str) -> list[RatingOutcome]:
        outcomes = []
        # One judge at a time per episode: each adds its verdict to the stored record.
        for each in judges:
            async with gate:
                outcome = await _rate_one(store, episode_id, each, judge_key(each), replace)
            outcome = replace_field(outcome, judge=each.model)
            if on_outcome is not None:
                on_outcome(outcome)
            outcomes.append(outcome)
        return outcomes

    rated = await asyncio.gather(*(one(episode_id) for episode_id in episode_ids))
    return [outcome for outcomes in rated for outcome in outcomes]


def check_to_rate(record: EpisodeRecord, judges: Sequence[Judge], *, replace: bool = False) -> None:
    """Refuse, saying what to do, to rate the one episode a user asked for when
    :func:`rate_stored` would only skip it: it is not complete, or (unless ``replace``)
    its one judge, or every judge of a panel, rated it already
    (:class:`~sotopia_are.record.VerdictExistsError`, else :class:`StudyInputError`).
    Many episodes are rated with the others skipped; one asked for by name is an error."""
    status = record.status
    if status is EpisodeStatus.COMPLETE:
        if replace:
            return
        if len(judges) == 1:
            record.check_new_verdict(judge_key(judges[0]))
        rated = {verdict.key for verdict in record.verdicts}
        if all(judge_key(judge) in rated for judge in judges):
            raise StudyInputError(
                f"episode {record.episode_id} already has a verdict of each of the "
                f"{len(judges)} judges; add another judge, or pass --replace to rate again"
            )
        return
    rerun = (
        "; rerun it (batch --resume reruns failed and interrupted episodes)"
        if status is not EpisodeStatus.RUNNING
        else " (it is still being played, or its run died: see 'list')"
    )
    raise StudyInputError(
        f"episode {record.episode_id} is {status.value}, not complete: only a finished "
        f"episode can be rated{rerun}"
    )


async def _rate_one(
    store: EpisodeStore, episode_id: str, judge: Judge, key: str, replace: bool
) -> RatingOutcome:
    try:
        record = store.load(episode_id)
        if record.status is not EpisodeStatus.COMPLETE:
            return RatingOutcome(episode_id, skipped=f"it is {record.status.value}")
        earlier = next((v for v in record.verdicts if v.key == key), None)
        if earlier is not None and earlier.rated and not replace:
            return RatingOutcome(episode_id, skipped="this judge rated it already")
        rated = await arate(
            record, judge, store=store, replace=earlier is not None, preflight=False
        )
    except Exception as error:
        if fails_every_episode(error):
            raise
        if isinstance(error, StorageError | ValueError | RequestRejectedError):
            return RatingOutcome(episode_id, error=str(error))
        # The judge's own failures are in its verdict; this is anything else.
        return RatingOutcome(episode_id, error=f"{type(error).__name__}: {error}")
    verdict = rated.verdict
    return RatingOutcome(episode_id, rated=verdict is not None and verdict.rated)


@twin_of(arate_stored)
def rate_stored(*args: Any, **kwargs: Any) -> list[RatingOutcome]:
    """Rate stored episodes with one judge or a panel, and store the verdicts:
    :func:`arate_stored` on a new event loop.

    Args:
        store: The store holding the episodes.
        episode_ids: The episodes to rate.
        judge: A judge, or several (a panel): each adds its own verdict (default: the
            ``study``'s judges).
        concurrency: Episodes rated at once (default: the ``study``'s, else 8).
        replace: Rate again episodes a judge already rated (its verdict is replaced).
        on_outcome: Told each :class:`RatingOutcome` as it comes.
        preflight: Check every judge's model before any rates (default true).
        study: The study's configuration, for what the other arguments leave out: the
            judges (its judge models, rubric, samples, sampling and LLM settings) and
            the concurrency. An argument given wins over the study's field.

    Returns:
        One :class:`RatingOutcome` per episode and judge, in the order given: rated,
        skipped (not complete, or already rated by that judge) or failed, with why.

    Raises:
        ValueError: No judge (nor a ``study`` naming one), or ``concurrency`` below 1.
        sotopia_are.llm.ConfigurationError: Unless ``preflight`` is false, a judge's
            model cannot be called as configured (checked before any rates).
        sotopia_are.llm.PermanentLLMError: A judge's model cannot be used at all (a
            rejected key, an unknown model): it would fail every episode alike.
        sotopia_are.storage.StorageError: The store cannot be reached.

    Example:
        ```python
        with sa.connect() as store:
            ids = store.episode_ids(tag="pilot")
            panel = [sa.LLMJudge("gpt-4o"), sa.LLMJudge("claude-3-5-sonnet-latest")]
            outcomes = sa.rate_stored(store, ids, panel)
        ```
    """
    return asyncio.run(arate_stored(*args, **kwargs))
