"""`RayExecutor`: a batch's worker jobs as Ray actors, their reports polled by the driver.

Imported only by :func:`~sotopia_are.cluster.ray_batch` (it imports Ray). The episodes are
dealt out in chunks to one actor per job (one CPU of some node), and each chunk runs there
exactly as a local worker process runs its job — its own thread, event loop, LLM session
and store connection — with every request also holding a slot of the endpoint's limit in
Redis (:class:`~sotopia_are.cluster.limiter.RedisLimiter`): the batch's
``LLMConfig.max_concurrency``, when set, bounds each endpoint across the cluster.
Actors are never restarted: a chunk lost with its node leaves its episodes to a resume,
which Ray's own retry could not know to skip; the other chunks go to the live actors.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import math
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import ray
from ray.exceptions import RayError

from sotopia_are.llm import CONCURRENCY, InFlight
from sotopia_are.storage import EpisodeStore
from sotopia_are.studies.batch_plan import BatchEpisode
from sotopia_are.studies.worker_protocol import (
    HEARTBEAT_S,
    EpisodeOutcome,
    Heartbeat,
    WorkerJob,
    WorkerReport,
)
from sotopia_are.studies.workers import lost_outcome, run_job

from .limiter import RedisLimiter

__all__ = ["RayExecutor"]

_Poll = tuple[list[WorkerReport], bool]

CHUNK_WAVES = 4
"""A chunk holds this many times a worker's concurrency of episodes: small enough that the
work spreads over the nodes as they free up, large enough that a chunk's last, slowest
episodes idle few of its slots."""


@ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)
class _Worker:
    """Runs one job at a time in a thread of its own (:meth:`start`); :meth:`poll` hands
    its reports over."""

    def __init__(self, limit: int | None) -> None:
        self._limit = limit
        self._reports: queue.Queue[WorkerReport] = queue.Queue()
        self._thread: threading.Thread | None = None

    def start(self, job: WorkerJob) -> None:
        """Begin ``job`` (the previous one has ended: the driver waits for it)."""
        run = (job, self._limit, self._reports.put)
        self._thread = threading.Thread(target=_play, args=run, daemon=True)
        self._thread.start()

    def poll(self, wait_s: float) -> _Poll:
        """The reports since the last poll (waiting up to ``wait_s`` for the first), and
        whether the job has ended with nothing more to report."""
        reports: list[WorkerReport] = []
        with contextlib.suppress(queue.Empty):
            reports.append(self._reports.get(timeout=wait_s))
            while True:
                reports.append(self._reports.get_nowait())
        running = self._thread is not None and self._thread.is_alive()
        return reports, not running and self._reports.empty()


def _play(job: WorkerJob, limit: int | None, report: Callable[[WorkerReport], None]) -> None:
    """Run ``job`` with each endpoint's ``limit`` shared through the store (None: none).

    A function of the module, not of :class:`_Worker`: Ray ships the actor class by value,
    and this reaches the process-wide registry, which cannot be pickled.
    """
    url = job.store_url
    limiter = None if limit is None or url is None else RedisLimiter(url, limit)
    CONCURRENCY.shared = limiter  # an actor's process runs one job at a time
    try:
        run_job(job, report)
    finally:
        CONCURRENCY.shared = None
        if limiter is not None:
            limiter.close()


def chunks(jobs: Sequence[WorkerJob]) -> list[WorkerJob]:
    """The episodes of ``jobs`` in the plan's order (each job holds every n-th), in jobs of
    :data:`CHUNK_WAVES` times a job's concurrency, with the same settings; fewer when the
    batch is small, so every actor has a chunk."""
    episodes = [
        item
        for wave in itertools.zip_longest(*(job.episodes for job in jobs))
        for item in wave
        if item is not None
    ]
    share = math.ceil(len(episodes) / len(jobs))
    size = max(min(jobs[0].concurrency * CHUNK_WAVES, share), 1)
    # Chunks go to the actors in order as they free up: the ones running at once are
    # about consecutive, and each keeps its part of a model server's slots busy.
    return [
        replace(
            jobs[0], episodes=tuple(episodes[start : start + size]), part=(n % len(jobs), len(jobs))
        )
        for n, start in enumerate(range(0, len(episodes), size))
    ]


class RayExecutor:
    """Runs a batch's episodes on the Ray cluster this process is connected to (an
    :class:`~sotopia_are.studies.worker_protocol.Executor`): one actor per job, each taking the next
    chunk (:func:`chunks`) when it is done with one, so the work spreads over the nodes as
    they free up and a lost node takes only its chunk's episodes along; each endpoint
    bounded to ``limit`` requests in flight in all of them (None: each process keeps its
    own bound only)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit

    def __call__(
        self,
        jobs: Sequence[WorkerJob],
        take: Callable[[WorkerReport], None],
        store: EpisodeStore,
        *,
        judge: str | None,
    ) -> None:
        todo = collections.deque(chunks(jobs))
        actors = [_Worker.remote(self.limit) for _ in jobs]  # type: ignore[attr-defined]
        running: dict[int, WorkerJob] = {}
        reported: set[str] = set()
        calls = [0] * len(actors)  # model calls of each actor's finished chunks
        chunk_calls = [0] * len(actors)  # and of its current one, as last reported
        polls: dict[Any, int] = {}

        def give(index: int) -> None:
            running[index] = todo.popleft()
            actors[index].start.remote(running[index])  # run before the poll: one caller
            polls[actors[index].poll.remote(HEARTBEAT_S)] = index

        def lost(episodes: Sequence[BatchEpisode], cause: str) -> None:
            for item in episodes:
                if item.spec.episode_id not in reported:
                    take(lost_outcome(store, item.spec.episode_id, cause, judge))

        for index in range(min(len(actors), len(todo))):
            give(index)
        try:
            while polls:
                [ready], _ = ray.wait(list(polls), num_returns=1)
                index = polls.pop(ready)
                try:
                    reports, idle = ray.get(ready)
                except RayError as error:
                    take(Heartbeat(index, InFlight(), calls[index]))  # nothing in flight
                    lost(
                        running.pop(index).episodes,
                        f"its Ray worker was lost ({type(error).__name__})",
                    )
                    continue
                for report in reports:
                    if isinstance(report, EpisodeOutcome):
                        reported.add(report.episode_id)
                    if isinstance(report, Heartbeat):
                        # pids of nodes may coincide; the actor's index cannot.
                        chunk_calls[index] = report.calls
                        report = replace(report, pid=index, calls=calls[index] + report.calls)
                    take(report)
                if not idle:
                    polls[actors[index].poll.remote(HEARTBEAT_S)] = index
                    continue
                done = running.pop(index)
                calls[index], chunk_calls[index] = calls[index] + chunk_calls[index], 0
                lost(done.episodes, "its Ray worker ended without reporting it")
                if todo:
                    give(index)
            # Every actor was lost with chunks still to play.
            lost([item for job in todo for item in job.episodes], "every Ray worker was lost")
        finally:
            for actor in actors:
                ray.kill(actor)
