"""`batch`: many LLM episodes, stored, resumable, across worker processes.

A batch plans its episodes under stable ids (:mod:`~sotopia_are.studies.batch_plan`:
what a resume skips, reruns, rates or gives up on), checks every model it will call,
then hands the pending episodes to worker processes
(:mod:`~sotopia_are.studies.workers`), or to an
:class:`~sotopia_are.studies.worker_protocol.Executor` of the caller's, and gathers what
they report (:mod:`~sotopia_are.studies.worker_protocol`) into progress and a
:class:`BatchResult`. Spec files are read by :func:`read_specs`.

One episode's error is that episode's outcome, never the batch's: whatever goes wrong
while playing or rating it is recorded on it (``failed``, or complete with the judge's
failure) and the others go on. Only configuration errors that would fail every episode
alike — a rejected key, an unknown model, a broken template, an unreachable store — stop
the batch (:class:`BatchError`); most are found before any episode is created, by the
preflight of every model the batch calls (:mod:`sotopia_are.llm.preflight`: a
:class:`~sotopia_are.llm.ConfigurationError`, nothing stored), which the worker processes
do not repeat. A worker process that dies (``kill -9``, out of memory) is noticed at
once: its running episodes are marked ``incomplete`` and reported as outcomes, and the
other workers go on. :attr:`BatchResult.failed` says whether the batch left anything
unfinished.

How many episodes run at once: ``concurrency`` in all when given; by default, in each
worker as many as its agents' endpoint takes requests at once
(:meth:`~sotopia_are.llm.LLMConfig.concurrency_for`: 128 for a model at an ``api_base``,
16 at a provider's own endpoint), so a fast server's latency is covered by the CPU's
work rather than the CPU waiting on the latency.

While episodes run, every worker reports the model requests it has in flight (and the
age of the oldest) about once a second (:data:`HEARTBEAT_S`), so a batch waiting on a
stuck server shows it rather than looking frozen.

Ctrl-C (``KeyboardInterrupt``) stops the batch: the workers ignore SIGINT (the parent
stops them), and this batch's episodes still ``running`` are marked ``incomplete`` before
the interrupt is raised again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sotopia_are.evaluation import Rubric
from sotopia_are.llm import InFlight, LLMConfig, ModelUse, Sampling, Usage, apreflight
from sotopia_are.social import EpisodeSpec
from sotopia_are.storage import EpisodeStore, connect

from .batch_plan import BatchEpisode, BatchPlan, ModelChoice, plan_batch, plan_run
from .batch_report import BatchProgress
from .config import StudyConfig
from .errors import BatchError, StudyInputError
from .spec_files import read_specs
from .worker_protocol import (
    HEARTBEAT_S,
    EpisodeOutcome,
    Executor,
    Heartbeat,
    Started,
    WorkerJob,
    WorkerReport,
    WorkerStopped,
)
from .workers import (
    default_workers,
    fails_every_episode,
    mark_left_running,
    run_in_processes,
    run_job,
    server_slots,
    worker_concurrency,
)

# The batch's public names, wherever they are defined: users import them from here.
__all__ = [
    "HEARTBEAT_S",
    "BatchEpisode",
    "BatchError",
    "BatchPlan",
    "BatchResult",
    "EpisodeOutcome",
    "Executor",
    "ModelChoice",
    "batch",
    "fails_every_episode",
    "plan_batch",
    "read_specs",
]


@dataclass(frozen=True)
class BatchResult:
    """A finished batch: its plan, one outcome per pending episode (in finishing order),
    the wall time and the worker processes used."""

    plan: BatchPlan
    outcomes: tuple[EpisodeOutcome, ...]
    elapsed_s: float
    workers: int

    @property
    def usage(self) -> Usage:
        """The totals of every model call of the episodes run."""
        return Usage.total(outcome.usage for outcome in self.outcomes)

    @property
    def unfinished(self) -> int:
        """How many of the planned episodes this run leaves not complete and rated: those
        that failed, were interrupted or left unrated, those left to another run, and
        those given up on."""
        failed = sum(outcome.failed for outcome in self.outcomes)
        return failed + len(self.plan.busy) + len(self.plan.given_up)

    @property
    def failed(self) -> bool:
        """Whether the batch leaves any episode unfinished (see :attr:`unfinished`)."""
        return self.unfinished > 0


def batch(
    specs: Sequence[EpisodeSpec],
    models: str | ModelChoice | None = None,
    *,
    tag: str | None = None,
    store: EpisodeStore | None = None,
    repeat: int = 1,
    judge_model: str | None = None,
    rubric: str | None = None,
    samples: int | None = None,
    agent_sampling: Sampling | None = None,
    judge_sampling: Sampling | None = None,
    config: LLMConfig | None = None,
    resume: bool = False,
    stale_after: float = 300.0,
    max_attempts: int = 3,
    concurrency: int | None = None,
    workers: int | None = None,
    on_plan: Callable[[BatchPlan], None] | None = None,
    on_outcome: Callable[[EpisodeOutcome], None] | None = None,
    on_progress: Callable[[BatchProgress], None] | None = None,
    executor: Executor | None = None,
    preflight: bool = True,
    study: StudyConfig | None = None,
) -> BatchResult:
    """Play ``specs`` times ``repeat`` with LLM agents, rate and store every episode.

    Every episode gets a stable id (from ``tag``, the spec's id, the models and the
    repetition), so running the same batch again with ``resume`` finds what was done.
    The pending episodes are split over worker processes, each storing its episodes as
    they are played. An episode's own error is its outcome, not an exception: it is
    recorded on the episode (``failed``, or complete with the judge's failure) and the
    others go on. See the module for how resuming, concurrency and dead workers work.

    Args:
        specs: The episodes to play.
        models: The agents' models: one model for everyone, ``{agent name: model}``, or
            one such mapping per spec, in the specs' order (default: the ``study``'s).
        tag: The batch's name: its episodes are stored under it and resumed by it
            (default: the ``study``'s; one of the two is needed).
        store: Where to store them (default: :func:`~sotopia_are.storage.connect`).
        repeat: How many times each spec is played.
        judge_model: The judge's model; ``None`` leaves the episodes unrated (unless a
            ``study`` that evaluates names one).
        rubric: The judge's rubric: ``"sotopia_eval"`` (the default), ``"goal_only"``
            or a rubric JSON file.
        samples: How many times the judge rates each episode (mean and spread;
            default 1).
        agent_sampling: The agents' sampling (default ``Sampling()``: the provider's).
        judge_sampling: The judge's sampling (default
            :data:`~sotopia_are.llm.DEFAULT_JUDGE_SAMPLING`, temperature 0).
        config: Settings of every model call: base URL, key, timeouts, concurrency.
        resume: Skip what a previous run of the batch completed and rated, rerun what
            failed or was interrupted (up to ``max_attempts`` starts each), rate what
            is complete but unrated.
        stale_after: Seconds without an event after which a ``running`` episode is taken
            as left by a dead run (and played again on resume); more recent ones belong
            to a run still going and are left alone.
        max_attempts: How many times one episode may be started before a resume gives
            up on it.
        concurrency: Episodes at once in all (default: per worker, as many as its
            agents' endpoint takes requests at once).
        workers: Worker processes (default: one more than the CPU cores, no more than a
            local model server's decoding slots when it says how many; at most one per
            episode).
        on_plan: Told the :class:`BatchPlan` before anything runs.
        on_outcome: Told each :class:`EpisodeOutcome` as its episode finishes.
        on_progress: Told where the batch stands (:class:`BatchProgress`) when an
            episode starts or finishes and about every :data:`HEARTBEAT_S` while
            episodes run.
        executor: Runs the workers elsewhere, e.g. on a Ray cluster
            (:func:`sotopia_are.cluster.ray_batch`).
        preflight: Check every model before anything is stored (default true).
        study: The study's configuration, for what the other arguments leave out: the
            agents' models and sampling, the judge's model (when it evaluates), rubric,
            samples and sampling, the LLM settings (without ``config``), the tag and the
            concurrency. An argument given wins over the study's field.

    Returns:
        The :class:`BatchResult`: the plan, one outcome per episode run (in finishing
        order), usage, and ``failed`` / ``unfinished`` saying what is left to do. Read
        each episode's record with ``store.load(outcome.episode_id)``.

    Unless ``preflight`` is false, every model of the agents and the judge is checked
    first (:func:`~sotopia_are.llm.apreflight`), before the store is touched.

    Raises:
        ConfigurationError: A model of the agents or the judge cannot be called as
            configured (``sotopia_are.llm.ConfigurationError``, naming the fix).
        BatchError: The batch's episodes exist and ``resume`` is false, or a
            configuration error that would fail every episode alike (a rejected key, an
            unknown model, a broken template, an unreachable store) stopped a worker;
            its unfinished episodes are left ``incomplete`` for a resume.
        StudyInputError: A bad plan (an agent without a model, two specs with one id, not
            one model mapping per spec), no tag, or ``max_attempts`` below 1.
        RubricError: An unknown rubric.
        KeyboardInterrupt: Ctrl-C; the batch's running episodes are stored
            ``incomplete`` first.

    Example:
        ```python
        from sotopia_are.studies import read_specs

        specs = read_specs(Path("examples/scenarios"))
        result = sa.batch(specs, "openai/qwen", tag="pilot", repeat=5,
                          judge_model="gpt-4o", resume=True,
                          config=sa.LLMConfig(api_base="http://localhost:8000/v1"))
        print(len(result.outcomes), "played;", result.unfinished, "left unfinished")
        ```
    """
    if max_attempts < 1:
        raise StudyInputError(f"max_attempts must be at least 1, got {max_attempts}")
    everyone = sorted({name for spec in specs for name in spec.agent_names})
    if study is not None:
        models = models if models is not None else study.agent_models(everyone)
        tag = tag or study.tag
        if judge_model is None and study.evaluate:
            judge_model = study.judge_name()
        rubric = rubric if rubric is not None else study.rubric
        samples = samples if samples is not None else study.samples
        agent_sampling = agent_sampling if agent_sampling is not None else study.sampling
        judge_sampling = judge_sampling if judge_sampling is not None else study.judge_sampling
        config = config or study.llm_config()
        concurrency = concurrency if concurrency is not None else study.concurrency
    if models is None:
        raise StudyInputError("no models for the agents: pass models, or a study naming them")
    if not tag:
        raise StudyInputError("a batch needs a tag: pass tag, or a study with one")
    rubric = rubric if rubric is not None else "sotopia_eval"
    samples = samples if samples is not None else 1
    chosen = dict.fromkeys(everyone, models) if isinstance(models, str) else models
    planned = plan_batch(specs, chosen, tag=tag, repeat=repeat)
    Rubric.load(rubric)  # a bad rubric fails before anything runs
    if preflight:
        asyncio.run(apreflight(_model_uses(planned, judge_model, config or LLMConfig())))
    owned = store is None
    used = store if store is not None else connect()
    try:
        plan = plan_run(
            used,
            planned,
            tag=tag,
            resume=resume,
            stale_after=stale_after,
            judge=judge_model,
            max_attempts=max_attempts,
            sampling=agent_sampling or Sampling(),
        )
        if on_plan is not None:
            on_plan(plan)
        settings = config or LLMConfig()
        used_models = [u.model for u in _model_uses(plan.pending, judge_model, settings)]
        # Asked once: the default worker count and the slots the workers share come from it
        # (a single worker shares nothing, and a cluster keeps parts of its own).
        slots = server_slots(settings, used_models) if executor is None and workers != 1 else {}
        if workers is None:
            workers = default_workers(settings, used_models, slots=slots)
        # Each worker may keep every pooled slot, so their limits add up to more than the
        # servers take; what the progress shows is bounded by the slots when all are pooled.
        pooled = len(slots) == len({settings.endpoint(m).key for m in used_models})
        slots_bound = sum(dict(slots.values()).values()) if slots and pooled else None
        count = min(workers, max(len(plan.pending), 1))
        each, job_config = worker_concurrency(concurrency, count, settings, plan)
        jobs = [
            WorkerJob(
                plan.pending[i::count],
                tag,
                used.url,
                each,
                judge_model,
                rubric,
                job_config,
                samples,
                agent_sampling,
                judge_sampling,
                part=(i, count),
            )
            for i in range(count)
        ]
        started = time.perf_counter()
        outcomes: list[EpisodeOutcome] = []
        beats: dict[int, Heartbeat] = {}
        progress = BatchProgress(total=len(plan.pending))
        started_ids: set[str] = set()
        finished_calls = 0  # the calls of the episodes reported finished, in all

        def advance(**changes: Any) -> None:
            nonlocal progress
            progress = replace(progress, **changes, elapsed_s=time.perf_counter() - started)
            if on_progress is not None:
                on_progress(progress)

        def take(outcome: WorkerReport) -> None:
            nonlocal finished_calls
            if isinstance(outcome, Started):
                started_ids.add(outcome.episode_id)
                advance(started=len(started_ids))
                return
            if isinstance(outcome, Heartbeat):
                # A dead worker's last word says nothing of the calls it had made.
                before = beats[outcome.pid].calls if outcome.pid in beats else 0
                beats[outcome.pid] = replace(outcome, calls=max(outcome.calls, before))
                advance(
                    in_flight=_in_all((beat.in_flight for beat in beats.values()), slots_bound),
                    calls=max(sum(beat.calls for beat in beats.values()), finished_calls),
                )
                return
            if isinstance(outcome, WorkerStopped):
                raise BatchError(
                    f"a worker stopped: {outcome.error}. Its unfinished episodes are stored "
                    "as incomplete; fix the cause, then resume the batch (--resume)"
                )
            outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
            # An episode a dead worker never started still counts as started and ended.
            started_ids.add(outcome.episode_id)
            finished_calls += outcome.usage.calls
            advance(
                started=len(started_ids),
                done=progress.done + (not outcome.failed),
                failed=progress.failed + outcome.failed,
                # Heartbeats lag a finished episode's calls by up to a beat.
                calls=max(progress.calls, finished_calls),
            )

        try:
            if executor is not None and jobs:
                executor(jobs, take, used, judge=judge_model)
            elif len(jobs) == 1:
                run_job(jobs[0], take, used)
            elif jobs:
                run_in_processes(jobs, take, used, judge=judge_model, slots=slots)
        except BaseException as stop:
            # Terminated workers record nothing themselves.
            why = "Ctrl-C" if isinstance(stop, KeyboardInterrupt) else "an error"
            mark_left_running(used, tag, [item.spec.episode_id for item in plan.pending], why)
            raise
        # The workers' last heartbeats may come after their last outcome, unread.
        if progress.in_flight.count:
            advance(in_flight=InFlight())
        return BatchResult(plan, tuple(outcomes), time.perf_counter() - started, len(jobs))
    finally:
        if owned:
            used.close()


def _model_uses(
    planned: Sequence[BatchEpisode], judge_model: str | None, config: LLMConfig
) -> list[ModelUse]:
    """Every model the batch's agents and judge will call, as its workers will call it."""
    agents = sorted({model for item in planned for model in item.models.values()})
    uses = [ModelUse(model, config, "the agents") for model in agents]
    return uses + ([ModelUse(judge_model, config, "the judge")] if judge_model else [])


def _in_all(workers: Iterable[InFlight], bound: int | None = None) -> InFlight:
    """The requests in flight in all ``workers``: the sum, and the oldest of them; their
    limits' sum, or ``bound`` if it is lower (the slots the workers share)."""
    busy = [w for w in workers if w.count]
    limit = sum(w.limit for w in busy)
    return InFlight(
        sum(w.count for w in busy),
        max((w.oldest_s for w in busy), default=0.0),
        limit if bound is None else min(limit, bound),
    )
