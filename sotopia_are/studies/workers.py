"""Batch workers: a job's episodes played in a process, and local worker processes.

A worker (:func:`run_job`) plays its :class:`~sotopia_are.studies.worker_protocol.WorkerJob`
in one event loop with one LLM session and store connection, at most the job's
``concurrency`` episodes at once, and reports as the worker protocol says
(:mod:`sotopia_are.studies.worker_protocol`). One episode's error is that episode's
outcome, never the batch's: whatever goes wrong while playing or rating it is recorded on
it (``failed``, or complete with the judge's failure) and the others go on; only an error
that would fail every episode alike (:func:`fails_every_episode`) stops the worker. A
worker's LLM session keeps no call records once they are counted (each episode's are
stored with it), so its memory is flat in the number of episodes it finishes.

Why processes: even over the lean HTTP transport a model call costs a few tenths of a
millisecond of CPU with the framework's own work around it (litellm's client: a few
milliseconds), which caps one process at a few thousand calls a second however many
episodes run concurrently. :func:`run_in_processes` runs one job per process (forked when
that is safe, else spawned), all writing to one store: the embedded server is shared
through its unix socket. A worker process that dies (``kill -9``, out of memory) is
noticed at once: its running episodes are marked ``incomplete`` and reported as
outcomes, and the other workers go on. The workers ignore SIGINT: on Ctrl-C the parent
stops them and marks what they left running (:func:`mark_left_running`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from sotopia_are import _import_module
from sotopia_are.agents import llm_agents_for
from sotopia_are.evaluation import LLMJudge, Rubric
from sotopia_are.llm import (
    CONCURRENCY,
    ConcurrencyRegistry,
    InFlight,
    LLMConfig,
    LLMSession,
    PermanentLLMError,
    ReplayMissError,
    TemplateError,
    Usage,
)
from sotopia_are.llm.errors import RequestRejectedError
from sotopia_are.llm.server_slots import server_root, total_slots
from sotopia_are.record import EpisodeRecord
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import (
    EpisodeStore,
    StorageError,
    StorageRefusedError,
    StorageUnavailableError,
    connect,
)

from .batch_plan import BatchEpisode, BatchPlan
from .errors import BatchError, StudyInputError
from .rating import arate
from .running import arun
from .worker_protocol import (
    HEARTBEAT_S,
    EpisodeOutcome,
    Heartbeat,
    Started,
    WorkerJob,
    WorkerReport,
    WorkerStopped,
)
from .worker_slots import SlotPool, WorkerSlots

__all__ = [
    "WORKER_GC_THRESHOLD",
    "fails_every_episode",
    "lost_outcome",
    "mark_left_running",
    "run_in_processes",
    "run_job",
    "server_slots",
    "worker_concurrency",
    "worker_loop_factory",
]


def worker_concurrency(
    concurrency: int | None, workers: int, config: LLMConfig, plan: BatchPlan
) -> tuple[int, LLMConfig]:
    """Episodes at once in each of ``workers``, and the LLM config they run with.

    Given ``concurrency`` (in all), each worker's share, which also bounds its requests
    per endpoint unless ``config.max_concurrency`` does (as the batch always did); else as
    many episodes as the agents' endpoints take requests at once, and ``config`` as it is.
    """
    if concurrency is not None:
        if concurrency < 1:
            raise StudyInputError(f"concurrency must be at least 1, got {concurrency}")
        share = max(math.ceil(concurrency / workers), 1)
        if config.max_concurrency is None:
            config = config.model_copy(update={"max_concurrency": share})
        return share, config
    models = {model for item in plan.pending for model in item.models.values()}
    limits = [config.concurrency_for(config.endpoint(model)) for model in sorted(models)]
    return max(limits, default=1), config


def server_slots(config: LLMConfig, models: Iterable[str]) -> dict[str, tuple[str, int]]:
    """The decoding slots of the model servers ``models`` are served by, where a server
    says how many (llama.cpp's ``total_slots``, asked here once per server): each such
    model's endpoint key mapped to its server's root and slots."""
    roots = {
        endpoint.key: server_root(endpoint.api_base)
        for endpoint in (config.endpoint(model) for model in models)
        if endpoint.api_base is not None
    }
    asked = sorted(set(roots.values()))

    async def ask() -> list[int | None]:
        return list(await asyncio.gather(*(total_slots(root) for root in asked)))

    said = dict(zip(asked, asyncio.run(ask()) if asked else [], strict=True))
    return {key: (root, slots) for key, root in roots.items() if (slots := said[root]) is not None}


def default_workers(
    config: LLMConfig,
    models: Iterable[str],
    *,
    slots: Mapping[str, tuple[str, int]] | None = None,
) -> int:
    """Worker processes for a batch that asks for none: one more than the CPU cores, but no
    more than the decoding slots of any model server the batch calls that says how many
    (``slots`` as :func:`server_slots` gives them; asked here when not given).

    One more than the cores: a worker waits for each of its round trips to the store, and
    the extra one uses those gaps (docs/benchmarks.md: 7 % less wall time on two cores).
    No more than the slots: each worker keeps at least one request out, and more requests
    than slots only wait in the server's queue."""
    cores = (os.cpu_count() or 1) + 1
    said = server_slots(config, models) if slots is None else slots
    return min([cores, *(size for _, size in said.values())])


def _outcome(record: EpisodeRecord, judge: str | None) -> EpisodeOutcome:
    """``record``'s outcome; ``unrated`` when the batch's ``judge`` (its model; None:
    the batch does not rate) gave it no rated verdict — another judge's (a game's
    outcome verdict) does not stand in for it."""
    verdict = record.verdict
    complete = record.status is EpisodeStatus.COMPLETE
    return EpisodeOutcome(
        record.episode_id,
        record.status,
        record.reason,
        record.usage,
        unrated=judge is not None and complete and record.verdict_of(judge) is None,
        judge_warnings=tuple(verdict.evaluation.warnings) if verdict else (),
    )


def fails_every_episode(error: BaseException) -> bool:
    """Whether ``error`` would fail every episode alike (a configuration error), rather
    than being this one episode's failure."""
    if isinstance(error, RequestRejectedError):
        return False
    return isinstance(
        error,
        PermanentLLMError
        | TemplateError
        | ReplayMissError
        | StorageUnavailableError
        | StorageRefusedError,
    )


def _outcome_of_error(
    store: EpisodeStore, episode_id: str, error: Exception, judge: str | None
) -> EpisodeOutcome:
    """The outcome of an episode whose run or rating raised ``error``: as stored (``arun``
    ends a running episode ``failed`` on an error), with ``error`` as its reason."""
    reason = f"{type(error).__name__}: {error}"
    try:
        record = store.load(episode_id)
    except (StorageError, ValueError):  # it failed before anything was stored
        return EpisodeOutcome(episode_id, EpisodeStatus.FAILED, reason, Usage())
    outcome = _outcome(record, judge)
    complete = outcome.status is EpisodeStatus.COMPLETE
    return replace(outcome, reason=reason, unrated=judge is not None and complete)


async def _run_share(
    job: WorkerJob, store: EpisodeStore, report: Callable[[WorkerReport], None]
) -> None:
    """Play (or rate) ``job``'s episodes, at most ``job.concurrency`` at once, reporting
    each start and outcome and a heartbeat about every :data:`HEARTBEAT_S`.

    Not :func:`sotopia_are.social.run_episodes`, although both gate episodes with a
    semaphore in one task group: that runs bare episodes (agents and sinks, no store, no
    judge) and returns every result at the end, and an agent's error aside, any error
    cancels the rest. A worker plays each episode through :func:`~sotopia_are.studies.arun`
    (stored as it is played, rated, never left ``running``) or only rates it, reports it
    the moment it ends, and turns its error into its outcome unless the error would fail
    every episode alike. Going through ``run_episodes`` would mean wrapping each episode
    in all of that again inside its agent factory and sinks, for no gain."""
    # Each episode's calls are stored with it; the worker's session only counts them.
    concurrency = ConcurrencyRegistry(part=job.part)
    concurrency.shared = CONCURRENCY.shared  # a cluster's limit across processes, if set
    session = LLMSession(job.config, retain_calls=False, concurrency=concurrency)
    judge = (
        LLMJudge(
            job.judge_model,
            Rubric.load(job.rubric),
            samples=job.samples,
            session=session,
            sampling=job.judge_sampling,
        )
        if job.judge_model
        else None
    )
    gate = asyncio.Semaphore(job.concurrency)

    async def one(item: BatchEpisode) -> None:
        async with gate:
            report(Started(item.spec.episode_id))
            try:
                record = await play(item)
            except Exception as error:
                if fails_every_episode(error):
                    raise
                report(_outcome_of_error(store, item.spec.episode_id, error, job.judge_model))
                return
            report(_outcome(record, job.judge_model))

    async def play(item: BatchEpisode) -> EpisodeRecord:
        if item.judge_only and judge is not None:
            # Unrated: this judge's failed verdict, if any, gives way to a new try.
            stored = store.load(item.spec.episode_id)
            return await arate(stored, judge, store=store, replace=True, preflight=False)
        return await arun(
            item.spec,
            llm_agents_for(item.spec, item.models, session, sampling=job.agent_sampling),
            models=item.models,
            judge=judge,
            store=store,
            tag=job.tag,
            scenario_id=item.scenario_id,
            preflight=False,  # the batch checked its models before starting the workers
        )

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            report(Heartbeat(os.getpid(), session.concurrency.in_flight(), session.call_count))

    beating = asyncio.create_task(heartbeat())
    try:
        async with asyncio.TaskGroup() as group:
            for item in job.episodes:
                group.create_task(one(item))
    finally:
        beating.cancel()
        # Its last beat may have counted requests that have since been answered.
        report(Heartbeat(os.getpid(), InFlight(), session.call_count))


def run_job(
    job: WorkerJob, report: Callable[[WorkerReport], None], store: EpisodeStore | None = None
) -> None:
    """Run ``job`` in this process, on ``store`` (else a connection of its own to
    ``job.store_url``), passing every report to ``report`` as the worker protocol says
    (:mod:`~sotopia_are.studies.worker_protocol`); an error that stops it is reported as
    :class:`~sotopia_are.studies.worker_protocol.WorkerStopped` (a worker never raises
    into its parent). What an :class:`~sotopia_are.studies.worker_protocol.Executor`
    calls wherever it runs a job. It blocks until the job is done and starts an event loop
    of its own: call it from no running loop (a thread of its own will do)."""
    try:
        with contextlib.ExitStack() as stack:
            used = store if store is not None else stack.enter_context(connect(job.store_url))
            stack.enter_context(_collector_for_many_episodes())
            with asyncio.Runner(loop_factory=worker_loop_factory()) as runner:
                runner.run(_run_share(job, used, report))
    except BatchError:
        raise
    except Exception as error:  # reported to the parent, which fails with the message
        report(WorkerStopped(_first_error(error)))


def worker_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """What makes a worker's event loop: uvloop's where it is installed (a dependency
    where it has wheels: CPython on Linux and macOS), else asyncio's own (``None``).
    uvloop runs a batch's turns and model calls in about 2.5 % fewer instructions per
    episode (measured in docs/benchmarks.md); nothing in a worker depends on which loop
    it is."""
    try:
        import uvloop
    except ImportError:  # not a dependency on this platform: asyncio's loop
        return None
    return uvloop.new_event_loop


WORKER_GC_THRESHOLD = 100_000
"""Allocations between two young-generation collections in a worker (Python's default
is 700). A played episode leaves no cyclic garbage (its kernel is let go of when it ends,
:meth:`~sotopia_are.social.live_episode.LiveEpisode.result`): in a batch whose calls all
succeed a worker of 333 episodes makes no young collection at all. Failures do leave
cycles (an exception, its traceback and the frames of the retry loop: some 100 tracked
objects a retried request), which these collections free. Each walks what is young, the
episodes in flight included, so the rarer the better while that stays small beside them
(measured, one worker, 400 episodes: 0.31 s of collections at 10,000, 0.20 s at 100,000,
the peak resident memory the same; docs/benchmarks.md, rounds 7 and 13)."""


@contextlib.contextmanager
def _collector_for_many_episodes() -> Iterator[None]:
    """The garbage collector tuned for hundreds of episodes in flight, for the block:
    what is alive before it (modules, prompts, the store client) frozen out of every
    collection, and young collections 140 times rarer. With Python's defaults the
    collector took about a fifth of a worker's CPU (measured: 1.56 → 1.30 ms per model
    call, for some 20 MB more at the peak)."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(before[0], WORKER_GC_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def _first_error(error: BaseException) -> str:
    # An episode's error reaches here wrapped by the TaskGroup; report the first.
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"


GATHER_S = 0.05
"""After a report, how long a batch's parent lets its workers' next reports gather before
it takes them all in one go (measured, 400 episodes, three workers: the parent's CPU while
they run 0.14-0.16 s before, 0.05-0.06 s after). Progress is late by at most this; no
worker waits on the parent (a worker's queue sends from a thread of its own)."""


def _worker_main(job: WorkerJob, outcomes: Any, pool: SlotPool | None, index: int) -> None:
    """Entry point of worker ``index``: outcomes go to the parent's queue; its requests to
    the servers of ``pool`` (None: none) also hold one of their permits.

    Ctrl-C reaches every process of the terminal's group; the parent alone handles it
    (it stops the workers and records what they left), so a worker ignores SIGINT rather
    than dying with a traceback of its own.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if pool is None:
        run_job(job, outcomes.put)
        return
    shared = WorkerSlots(pool, index)
    CONCURRENCY.shared = shared  # a worker process runs one job
    try:
        run_job(job, outcomes.put)
    finally:
        CONCURRENCY.shared = None
        shared.close()


def run_in_processes(
    jobs: Sequence[WorkerJob],
    take: Callable[[WorkerReport], None],
    store: EpisodeStore,
    *,
    judge: str | None,
    slots: Mapping[str, tuple[str, int]] | None = None,
) -> None:
    """Run ``jobs`` in worker processes, passing their outcomes to ``take``. A worker that
    dies leaves its unreported episodes to :func:`lost_outcome`, at once. ``slots`` (as
    :func:`server_slots` gives them): the servers whose decoding slots the workers share
    as they free (:class:`~sotopia_are.studies.worker_slots.SlotPool`)."""
    _load_before_fork(jobs)
    context = (
        multiprocessing.get_context("fork")
        if _worker_start_method() == "fork"
        else multiprocessing.get_context("spawn")
    )
    results = context.Queue()
    pool = SlotPool.create(context, slots, len(jobs)) if slots else None
    if pool is not None:
        # The pool bounds the requests to each of its servers in all the workers: each
        # worker may use every slot, not a fixed part of them.
        jobs = [replace(job, part=(0, 1)) for job in jobs]
    processes = [
        context.Process(target=_worker_main, args=(job, results, pool, index), daemon=True)
        for index, job in enumerate(jobs)
    ]
    for process in processes:
        process.start()
    owner = {item.spec.episode_id: index for index, job in enumerate(jobs) for item in job.episodes}
    waiting = set(owner)
    dead: set[int] = set()

    def receive(outcome: WorkerReport) -> None:
        if isinstance(outcome, EpisodeOutcome):
            if outcome.episode_id not in waiting:
                return  # already reported for its dead worker
            waiting.discard(outcome.episode_id)
        take(outcome)

    try:
        checked = time.monotonic()
        while waiting:
            with contextlib.suppress(queue.Empty):
                receive(results.get(timeout=HEARTBEAT_S))
                # Taken one by one as they came, the reports (two per episode and the
                # heartbeats) woke this process thousands of times a batch, most of its
                # CPU while the workers run: what comes in the next GATHER_S is taken in
                # the same wake (until the queue is empty or the workers are due a look).
                if waiting:
                    time.sleep(GATHER_S)
                while waiting and time.monotonic() - checked < HEARTBEAT_S:
                    receive(results.get(block=False))
            # Heartbeats keep the queue busy: look at the workers once a beat regardless.
            if time.monotonic() - checked < HEARTBEAT_S:
                continue
            checked = time.monotonic()
            exited = [
                i for i, p in enumerate(processes) if i not in dead and p.exitcode is not None
            ]
            if not exited:
                continue
            # What a worker put before it exited is in the queue by now: take it first
            # (for a bounded time: the live workers' heartbeats never leave it empty long).
            with contextlib.suppress(queue.Empty):
                while time.monotonic() - checked < HEARTBEAT_S:
                    receive(results.get(timeout=0.1))
            for index in exited:
                dead.add(index)
                if pool is not None:
                    pool.reclaim(index)
                died = f"its worker process died ({_exit_cause(processes[index].exitcode)})"
                take(Heartbeat(processes[index].pid or 0, InFlight()))  # nothing in flight now
                for episode_id in sorted(e for e in waiting if owner[e] == index):
                    waiting.discard(episode_id)
                    take(lost_outcome(store, episode_id, died, judge))
        for process in processes:
            process.join()
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join()


def _load_before_fork(jobs: Sequence[WorkerJob]) -> None:
    """Load the modules ``jobs``' episodes need that load on first use, so that forked
    workers share them rather than each loading its own: the games' when an episode is
    a game (:func:`~sotopia_are.studies.playing.play_episode`)."""
    if any(item.spec.game is not None for job in jobs for item in job.episodes):
        _import_module("sotopia_are.games")


def _worker_start_method() -> str:
    """How worker processes start: ``fork`` on Linux when this process runs one thread (a
    fork copies no other thread, so no lock another thread holds), sparing each worker the
    imports a ``spawn`` repeats (about half a second of CPU); else ``spawn``."""
    if sys.platform == "linux" and threading.active_count() == 1:
        return "fork"
    return "spawn"


def lost_outcome(
    store: EpisodeStore, episode_id: str, cause: str, judge: str | None
) -> EpisodeOutcome:
    """The outcome of an episode whose worker was lost (``cause``: how) before reporting it:
    marked ``incomplete`` if the worker left it running, else as stored (it may have ended
    just before), else never started. ``judge``: the model of the judge the batch rates
    its episodes with (None: it does not rate)."""
    # It may have ended since the worker was lost; that is fine either way.
    with contextlib.suppress(StorageError):
        store.mark_incomplete(episode_id, f"interrupted: {cause}")
    try:
        return _outcome(store.load(episode_id), judge)
    except (StorageError, ValueError):
        return EpisodeOutcome(
            episode_id, EpisodeStatus.INCOMPLETE, f"not started: {cause}", Usage()
        )


def _exit_cause(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-exitcode).name}"
    return f"exit code {exitcode}"


def mark_left_running(store: EpisodeStore, tag: str, episode_ids: Sequence[str], why: str) -> None:
    """Mark ``incomplete`` those of this run's episodes (of batch ``tag``) that its stopped
    workers left ``running`` (a terminated worker records nothing itself)."""
    for episode in store.list_episodes(tag=tag, status=EpisodeStatus.RUNNING):
        if episode.pk in episode_ids:
            # It may have ended since it was listed; that is fine either way.
            with contextlib.suppress(StorageError):
                store.mark_incomplete(episode.pk, f"interrupted: its batch was stopped ({why})")
