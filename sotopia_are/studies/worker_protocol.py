"""The worker protocol: what a batch gives its workers and what they report back.

:func:`~sotopia_are.studies.batch` splits its pending episodes into :class:`WorkerJob`\\ s
and hands them to an :class:`Executor`, which runs each job somewhere — the default in
this process or in local worker processes (:mod:`sotopia_are.studies.workers`),
:mod:`sotopia_are.cluster` as Ray actors — by calling
:func:`~sotopia_are.studies.workers.run_job` there. A job reports, through the callback it
is run with, a stream of :data:`WorkerReport`\\ s, which the executor passes to the batch's
``take`` in the calling process, in the order the worker made them:

* :class:`Started` when it begins playing (or rating) an episode;
* :class:`Heartbeat` about every :data:`HEARTBEAT_S` while it runs episodes (its model
  requests in flight and the calls it has made), and once more, with nothing in flight,
  when it ends;
* :class:`EpisodeOutcome` when an episode ends, whatever became of it;
* :class:`WorkerStopped` instead, when an error that would fail every episode alike (a
  configuration error) stopped it: the batch then stops with a
  :class:`~sotopia_are.studies.BatchError`.

An executor owes the batch one :class:`EpisodeOutcome` per episode of its jobs: for an
episode whose worker is lost before reporting it,
:func:`~sotopia_are.studies.workers.lost_outcome` (which marks it ``incomplete`` in the
store). Every value here is picklable, so it crosses process boundaries as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from sotopia_are.llm import InFlight, LLMConfig, Sampling, Usage
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import EpisodeStore

from .batch_plan import BatchEpisode

__all__ = [
    "HEARTBEAT_S",
    "EpisodeOutcome",
    "Executor",
    "Heartbeat",
    "Started",
    "WorkerJob",
    "WorkerReport",
    "WorkerStopped",
]


HEARTBEAT_S = 1.0
"""How often a worker reports its requests in flight while it runs episodes."""


@dataclass(frozen=True)
class WorkerJob:
    """What one worker runs: its ``episodes`` of batch ``tag``, stored at ``store_url``
    (None: the default store), at most ``concurrency`` at once, each played with the
    agents' models of its :class:`BatchEpisode` and ``agent_sampling``, and rated by
    ``judge_model`` (None: not rated) on ``rubric``, ``samples`` times, with
    ``judge_sampling``; every model call made with ``config``. ``part``: the job is worker
    ``i`` of ``n`` sending to the same model servers, and keeps its part of a server's
    decoding slots busy (see :class:`~sotopia_are.llm.AdaptiveLimit`); ``(0, 1)`` when the
    workers share the slots as they free (local processes,
    :class:`~sotopia_are.studies.worker_slots.SlotPool`)."""

    episodes: tuple[BatchEpisode, ...]
    tag: str
    store_url: str | None
    concurrency: int
    judge_model: str | None
    rubric: str
    config: LLMConfig
    samples: int = 1
    agent_sampling: Sampling | None = None
    judge_sampling: Sampling | None = None
    part: tuple[int, int] = (0, 1)


@dataclass(frozen=True)
class Started:
    """A worker began playing (or rating) an episode."""

    episode_id: str


@dataclass(frozen=True)
class Heartbeat:
    """A worker's model requests in flight and model calls made so far, reported while it
    runs. ``pid`` tells the workers apart (its process id; an executor whose workers' ids
    may coincide, such as processes on several nodes, puts its own number for each)."""

    pid: int
    in_flight: InFlight
    calls: int = 0


@dataclass(frozen=True)
class EpisodeOutcome:
    """A finished episode as a worker reports it. ``unrated``: it completed but the judge
    could not rate it; ``judge_warnings``: what is suspicious in its verdict."""

    episode_id: str
    status: EpisodeStatus
    reason: str
    usage: Usage
    unrated: bool = False
    judge_warnings: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """Whether a study cannot count it: it did not complete, or it is not rated."""
        return self.status is not EpisodeStatus.COMPLETE or self.unrated


@dataclass(frozen=True)
class WorkerStopped:
    """A worker's error that would fail every episode alike, reported instead of its
    remaining outcomes (``error``: its type and message)."""

    error: str


WorkerReport = EpisodeOutcome | WorkerStopped | Heartbeat | Started
"""Everything a worker reports."""


class Executor(Protocol):
    """Runs a batch's worker ``jobs`` somewhere and passes every report to ``take`` in the
    calling process, returning when every episode of the jobs has its outcome; an episode
    whose worker is lost is reported as an outcome (marked ``incomplete`` in ``store``).
    ``judge``: the model of the judge the jobs rate their episodes with (None: they do
    not rate). The default runs one job in-process,
    more in local processes (:func:`~sotopia_are.studies.workers.run_in_processes`);
    :mod:`sotopia_are.cluster` runs them on a Ray cluster."""

    def __call__(
        self,
        jobs: Sequence[WorkerJob],
        take: Callable[[WorkerReport], None],
        store: EpisodeStore,
        *,
        judge: str | None,
    ) -> None: ...
