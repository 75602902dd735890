"""`RayExecutor`: a batch's worker jobs as Ray actors, their reports polled by the driver.

Imported only by :func:`~sotopia_are.cluster.ray_batch` (it imports Ray). Each job runs in
an actor (one CPU of some node) exactly as a local worker process runs it — its own thread,
event loop, LLM session and store connection — with every request also holding a slot of
the endpoint's limit in Redis (:class:`~sotopia_are.cluster.limiter.RedisLimiter`): the
batch's ``LLMConfig.max_concurrency``, when set, bounds each endpoint across the cluster.
Actors are never restarted: a job lost with its node leaves its episodes to a resume,
which Ray's own retry could not know to skip.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace

import ray
from ray.exceptions import RayError

from sotopia_are.llm import CONCURRENCY, InFlight, Usage
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import EpisodeStore, StorageError
from sotopia_are.studies.batch import (
    HEARTBEAT_S,
    EpisodeOutcome,
    _Heartbeat,
    _outcome,
    _Report,
    _run_job,
    _WorkerJob,
)

from .limiter import RedisLimiter

__all__ = ["RayExecutor"]

_Poll = tuple[list[_Report], bool]


@ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)
class _Worker:
    """Runs one job in a thread of its own from the start; :meth:`poll` hands its reports over."""

    def __init__(self, job: _WorkerJob, limit: int | None) -> None:
        self._reports: queue.Queue[_Report] = queue.Queue()
        run = (job, limit, self._reports.put)
        self._thread = threading.Thread(target=_play, args=run, daemon=True)
        self._thread.start()

    def poll(self, wait_s: float) -> _Poll:
        """The reports since the last poll (waiting up to ``wait_s`` for the first), and
        whether the job has ended with nothing more to report."""
        reports: list[_Report] = []
        with contextlib.suppress(queue.Empty):
            reports.append(self._reports.get(timeout=wait_s))
            while True:
                reports.append(self._reports.get_nowait())
        return reports, not self._thread.is_alive() and self._reports.empty()


def _play(job: _WorkerJob, limit: int | None, report: Callable[[_Report], None]) -> None:
    """Run ``job`` with each endpoint's ``limit`` shared through the store (None: none).

    A function of the module, not of :class:`_Worker`: Ray ships the actor class by value,
    and this reaches the process-wide registry, which cannot be pickled.
    """
    url = job.store_url
    limiter = None if limit is None or url is None else RedisLimiter(url, limit)
    CONCURRENCY.shared = limiter  # an actor's process runs this one job
    try:
        _run_job(job, report)
    finally:
        CONCURRENCY.shared = None
        if limiter is not None:
            limiter.close()


class RayExecutor:
    """Runs worker jobs as actors on the Ray cluster this process is connected to (an
    :class:`~sotopia_are.studies.batch.Executor`), each endpoint bounded to ``limit``
    requests in flight in all of them (None: each process keeps its own bound only)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit

    def __call__(
        self,
        jobs: Sequence[_WorkerJob],
        take: Callable[[_Report], None],
        store: EpisodeStore,
        *,
        judged: bool,
    ) -> None:
        actors = [_Worker.remote(job, self.limit) for job in jobs]  # type: ignore[attr-defined]
        waiting = {
            item.spec.episode_id: index for index, job in enumerate(jobs) for item in job.episodes
        }

        def lost(index: int, cause: str) -> None:
            take(_Heartbeat(index, InFlight()))  # nothing in flight there any more
            for episode_id in sorted(e for e, owner in waiting.items() if owner == index):
                del waiting[episode_id]
                take(_lost(store, episode_id, cause, judged))

        polls = {actor.poll.remote(HEARTBEAT_S): index for index, actor in enumerate(actors)}
        try:
            while polls:
                [ready], _ = ray.wait(list(polls), num_returns=1)
                index = polls.pop(ready)
                try:
                    reports, done = ray.get(ready)
                except RayError as error:
                    lost(index, f"its Ray worker was lost ({type(error).__name__})")
                    continue
                for report in reports:
                    if isinstance(report, EpisodeOutcome):
                        waiting.pop(report.episode_id, None)
                    # pids of different nodes may coincide; the job's index cannot.
                    take(replace(report, pid=index) if isinstance(report, _Heartbeat) else report)
                if done:
                    lost(index, "its Ray worker ended without reporting it")
                else:
                    polls[actors[index].poll.remote(HEARTBEAT_S)] = index
        finally:
            for actor in actors:
                ray.kill(actor)


def _lost(store: EpisodeStore, episode_id: str, cause: str, judged: bool) -> EpisodeOutcome:
    """The outcome of an episode whose worker was lost: marked ``incomplete`` if it was
    left running, else as stored (it may have ended just before), else never started."""
    with contextlib.suppress(StorageError):  # it may have ended meanwhile: fine either way
        store.mark_incomplete(episode_id, f"interrupted: {cause}")
    try:
        return _outcome(store.load(episode_id), judged)
    except (StorageError, ValueError):
        return EpisodeOutcome(
            episode_id, EpisodeStatus.INCOMPLETE, f"not started: {cause}", Usage()
        )
