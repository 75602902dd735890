"""`batch`: many LLM episodes, stored, resumable, across worker processes.

Every episode of a batch has a deterministic id (``stable_episode_id`` of the tag, the
spec's name or id, the models and the repetition), so a resumed batch finds what a previous run
of the same batch completed and skips it. It reruns the failed and incomplete episodes —
unless one was already started ``max_attempts`` times (``EpisodeLog.attempt``): a poisoned
episode is then left as it is, with its reason, and listed in the plan as given up — and
the ``running`` ones with no event for ``stale_after`` seconds (a dead run left them; they
are marked ``incomplete`` first); more recently active ones belong to a run still going
and are left alone. With a judge, complete episodes without scores (never rated, or every
judge sample failed) are rated from their stored record.

One episode's error is that episode's outcome, never the batch's: whatever goes wrong
while playing or rating it is recorded on it (``failed``, or complete with the judge's
failure) and the others go on. Only configuration errors that would fail every episode
alike — a rejected key, an unknown model, a broken template, an unreachable store — stop
the batch (:class:`BatchError`); most are found before any episode is created, by the
preflight of every model the batch calls (:mod:`sotopia_are.llm.preflight`: a
:class:`~sotopia_are.llm.ConfigurationError`, nothing stored), which the worker processes
do not repeat. A worker process that dies (``kill -9``, out of memory)
is noticed at once: its running episodes are marked ``incomplete`` and reported as
outcomes, and the other workers go on. :attr:`BatchResult.failed` says whether the batch
left anything unfinished.

Why processes: even over the lean HTTP transport a model call costs a few tenths of a
millisecond of CPU with the framework's own work around it (litellm's client: a few
milliseconds), which caps one process at a few thousand calls a second however many
episodes run concurrently. The pending episodes are split across ``workers`` processes
(spawned: each has its own event loop, LLM session and store connection), all writing to
one store: the embedded server is shared through its unix socket.

How many episodes run at once: ``concurrency`` in all when given; by default, in each
worker as many as its agents' endpoint takes requests at once
(:meth:`~sotopia_are.llm.LLMConfig.concurrency_for`: 128 for a model at an ``api_base``,
16 at a provider's own endpoint), so a fast server's latency is covered by the CPU's
work rather than the CPU waiting on the latency. A worker's LLM session keeps no call
records once they are counted (each episode's are stored with it), so its memory is
flat in the number of episodes it finishes.

While episodes run, every worker reports the model requests it has in flight (and the
age of the oldest) about once a second (:data:`HEARTBEAT_S`), so a batch waiting on a
stuck server shows it rather than looking frozen.

Ctrl-C (``KeyboardInterrupt``) stops the batch: the workers ignore SIGINT (the parent
stops them), and this batch's episodes still ``running`` are marked ``incomplete`` before
the interrupt is raised again.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import math
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from sotopia_are.agents import llm_agents_for
from sotopia_are.evaluation import LLMJudge, Rubric
from sotopia_are.llm import (
    InFlight,
    LLMConfig,
    LLMSession,
    ModelUse,
    PermanentLLMError,
    ReplayMissError,
    Sampling,
    TemplateError,
    Usage,
    apreflight,
)
from sotopia_are.llm.errors import RequestRejectedError
from sotopia_are.record import EpisodeRecord
from sotopia_are.simulation.data_handler.reader import loads_json
from sotopia_are.social import EpisodeSpec, EpisodeStatus
from sotopia_are.storage import (
    EpisodeLog,
    EpisodeStore,
    StorageError,
    StorageRefusedError,
    StorageUnavailableError,
    connect,
    stable_episode_id,
)

from .batch_report import BatchProgress
from .errors import BatchError, StudyInputError
from .rating import arate
from .running import arun

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


HEARTBEAT_S = 1.0
"""How often a worker reports its requests in flight while it runs episodes."""


ModelChoice = Mapping[str, str] | Sequence[Mapping[str, str]]
"""The agents' models: one mapping of agent name → model for every spec, or one mapping
per spec, in the specs' order (e.g. a benchmark's model under test in one role)."""


@dataclass(frozen=True)
class BatchEpisode:
    """One episode of a batch: its spec (with its stable id), its scenario's id and the
    agents' models; ``judge_only``: it is complete but unrated, so only the judge runs."""

    spec: EpisodeSpec
    scenario_id: str
    models: dict[str, str]
    judge_only: bool = False


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
class BatchPlan:
    """What a batch will do: every episode planned, the ``pending`` ones it runs, how many
    it skips as complete, the ids it leaves to another run still playing them, and the
    episodes it gives up on (``{id: reason}``: failed or interrupted ``max_attempts``
    times); ``stale_after`` and ``max_attempts`` are the limits it was made with."""

    tag: str
    planned: tuple[BatchEpisode, ...]
    pending: tuple[BatchEpisode, ...]
    skipped: int
    busy: frozenset[str] = frozenset()
    given_up: Mapping[str, str] = field(default_factory=dict)
    stale_after: float = 300.0
    max_attempts: int = 3

    @property
    def rate_only(self) -> int:
        """Pending episodes that are complete and only need the judge."""
        return sum(item.judge_only for item in self.pending)

    @property
    def to_play(self) -> int:
        """Pending episodes that are played (new, failed, interrupted or left stale)."""
        return len(self.pending) - self.rate_only


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


def read_specs(path: Path) -> list[EpisodeSpec]:
    """The specs in ``path``: a JSONL file (one spec a line), a JSON file (a spec or a list
    of specs), or a directory of such files (``*.json``, ``*.jsonl``, not recursive).
    :class:`StudyInputError` naming the file (and line) of anything that is not a valid
    spec; ``OSError`` for an unreadable file."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())
        if not files:
            raise StudyInputError(f"{path} holds no .json or .jsonl spec files")
        return [spec for file in files for spec in read_specs(file)]
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        items = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
        return [_spec(f"{path}:{number}", line) for number, line in items]
    try:
        data = loads_json(text)
    except json.JSONDecodeError as error:
        raise StudyInputError(f"{path}: not JSON: {error}") from None
    if isinstance(data, list):
        return [_spec(f"{path}[{index}]", json.dumps(item)) for index, item in enumerate(data)]
    return [_spec(str(path), text)]


def _spec(where: str, text: str) -> EpisodeSpec:
    try:
        return EpisodeSpec.model_validate_json(text)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in error.errors()
        )
        raise StudyInputError(f"{where}: not a valid episode spec: {problems}") from None


def plan_batch(
    specs: Sequence[EpisodeSpec], models: ModelChoice, *, tag: str, repeat: int = 1
) -> list[BatchEpisode]:
    """Each spec ``repeat`` times, under a stable id and seed ``spec.seed + repetition``,
    played by ``models`` (agent name → model, or one such mapping per spec).

    The stable id is a hash of ``tag``, the spec's :meth:`~EpisodeSpec.stable_name` (its
    ``episode_id`` if given, else its ``name``, else its ``content_id()``), the models
    and the repetition, so a resumed batch plans the same ids again; the episodes'
    scenario id is the spec's ``name``, else that stable name. :class:`StudyInputError`
    naming the agents without a model, for two specs under one stable name and models
    (the same spec more than once is ``repeat``), or for not one mapping per spec."""
    each = [models] * len(specs) if isinstance(models, Mapping) else list(models)
    if len(each) != len(specs):
        raise StudyInputError(
            f"{len(each)} model mappings for {len(specs)} specs; give one per spec"
        )
    planned: list[BatchEpisode] = []
    ids: set[str] = set()
    shared: set[str] = set()  # stable names planned twice under the same models
    for spec, given in zip(specs, each, strict=True):
        name = spec.stable_name()
        missing = [agent for agent in spec.agent_names if agent not in given]
        if missing:
            raise StudyInputError(f"spec {name!r}: no model for {', '.join(missing)}")
        chosen = {agent: given[agent] for agent in spec.agent_names}
        for repetition in range(repeat):
            episode_id = stable_episode_id(
                tag, name, json.dumps(chosen, sort_keys=True), str(repetition)
            )
            played = spec.replace(episode_id=episode_id, seed=spec.seed + repetition)
            if episode_id in ids:
                shared.add(name)
            ids.add(episode_id)
            planned.append(BatchEpisode(played, spec.name or name, chosen))
    # Two specs under one name and models would be planned under the same ids: one would
    # be taken for the other's episodes, on resume too.
    if shared:
        raise StudyInputError(
            f"more than one spec of the batch is named {', '.join(map(repr, sorted(shared)))} "
            "(a spec's episode_id, else its name; without either, equal specs share one); give "
            "each spec its own name, and play a spec more than once with repeat (-n)"
        )
    return planned


def _plan(
    store: EpisodeStore,
    planned: Sequence[BatchEpisode],
    *,
    tag: str,
    resume: bool,
    stale_after: float,
    judged: bool,
    max_attempts: int,
    sampling: Sampling,
) -> BatchPlan:
    ids = {item.spec.episode_id for item in planned}
    if not resume:
        existing = set(store.episode_ids(tag=tag)) & ids
        if existing:
            raise BatchError(
                f"batch {tag!r} already has {len(existing)} of these episodes in "
                f"{store.location}; resume it (resume=True, --resume) to skip the complete ones "
                "and rerun the others, or use another tag"
            )
        return BatchPlan(tag, tuple(planned), tuple(planned), 0)
    store.mark_interrupted(tag=tag, idle_for=stale_after)
    busy = set(store.episode_ids(tag=tag, status=EpisodeStatus.RUNNING)) & ids
    complete = [
        episode
        for episode in store.list_episodes(tag=tag, status=EpisodeStatus.COMPLETE)
        if episode.pk in ids
    ]
    _check_same_sampling(complete, sampling, tag)
    # No scores: never rated, or every judge sample failed.
    unjudged = {episode.pk for episode in complete if not episode.scores} if judged else set()
    done = {episode.pk for episode in complete} - unjudged
    given_up = {
        episode.pk: f"{episode.error or episode.status.value} (started {episode.attempt} times)"
        for status in (EpisodeStatus.FAILED, EpisodeStatus.INCOMPLETE)
        for episode in store.list_episodes(tag=tag, status=status)
        if episode.pk in ids and episode.attempt >= max_attempts
    }
    pending = tuple(
        replace(item, judge_only=item.spec.episode_id in unjudged)
        for item in planned
        if item.spec.episode_id not in done | busy | given_up.keys()
    )
    return BatchPlan(
        tag,
        tuple(planned),
        pending,
        len(done),
        frozenset(busy),
        given_up,
        stale_after=stale_after,
        max_attempts=max_attempts,
    )


def _check_same_sampling(complete: Sequence[EpisodeLog], sampling: Sampling, tag: str) -> None:
    """:class:`BatchError` if a complete episode of the batch was played with other agent
    sampling than ``sampling``: a resume must not mix settings in one study. Episodes that
    did not record theirs (written before sampling was kept) are not compared."""
    for episode in complete:
        # Compared as text: extra settings are a dict, so a Sampling is not hashable.
        played = {str(Sampling.model_validate(s)) for s in episode.agent_sampling.values()}
        if played and played != {str(sampling)}:
            provider = "the provider's"
            before = ", ".join(sorted(text or provider for text in played))
            raise BatchError(
                f"batch {tag!r} was played with agent sampling {before} (episode "
                f"{episode.pk}), not {str(sampling) or provider}: resume it with the "
                "same settings, or use another tag"
            )


@dataclass(frozen=True)
class _WorkerJob:
    """What one worker runs (picklable, for spawned processes)."""

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


@dataclass(frozen=True)
class _WorkerStopped:
    """A worker's error, reported instead of an outcome."""

    error: str


@dataclass(frozen=True)
class _Heartbeat:
    """A worker's (process ``pid``'s) model requests in flight and model calls made so
    far, reported while it runs."""

    pid: int
    in_flight: InFlight
    calls: int = 0


@dataclass(frozen=True)
class _Started:
    """A worker began playing (or rating) an episode."""

    episode_id: str


_Report = EpisodeOutcome | _WorkerStopped | _Heartbeat | _Started


class Executor(Protocol):
    """Runs a batch's worker ``jobs`` somewhere and passes every report to ``take`` in the
    calling process; an episode whose worker is lost is reported as an outcome (marked
    ``incomplete`` in ``store``). The default runs one job in-process, more in spawned local
    processes; :mod:`sotopia_are.cluster` runs them on a Ray cluster."""

    def __call__(
        self,
        jobs: Sequence[_WorkerJob],
        take: Callable[[_Report], None],
        store: EpisodeStore,
        *,
        judged: bool,
    ) -> None: ...


def batch(
    specs: Sequence[EpisodeSpec],
    models: str | ModelChoice,
    *,
    tag: str,
    store: EpisodeStore | None = None,
    repeat: int = 1,
    judge_model: str | None = None,
    rubric: str = "sotopia_eval",
    samples: int = 1,
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
            one such mapping per spec, in the specs' order.
        tag: The batch's name: its episodes are stored under it and resumed by it.
        store: Where to store them (default: :func:`~sotopia_are.storage.connect`).
        repeat: How many times each spec is played.
        judge_model: The judge's model; ``None`` leaves the episodes unrated.
        rubric: The judge's rubric: ``"sotopia_eval"``, ``"goal_only"`` or a rubric
            JSON file.
        samples: How many times the judge rates each episode (mean and spread).
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
        workers: Worker processes (default: the CPU cores, at most one per episode).
        on_plan: Told the :class:`BatchPlan` before anything runs.
        on_outcome: Told each :class:`EpisodeOutcome` as its episode finishes.
        on_progress: Told where the batch stands (:class:`BatchProgress`) when an
            episode starts or finishes and about every :data:`HEARTBEAT_S` while
            episodes run.
        executor: Runs the workers elsewhere, e.g. on a Ray cluster
            (:func:`sotopia_are.cluster.ray_batch`).
        preflight: Check every model before anything is stored (default true).

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
            one model mapping per spec) or ``max_attempts`` below 1.
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
    everyone = {name for spec in specs for name in spec.agent_names}
    chosen = dict.fromkeys(everyone, models) if isinstance(models, str) else models
    planned = plan_batch(specs, chosen, tag=tag, repeat=repeat)
    Rubric.load(rubric)  # a bad rubric fails before anything runs
    if preflight:
        asyncio.run(apreflight(_model_uses(planned, judge_model, config or LLMConfig())))
    owned = store is None
    used = store if store is not None else connect()
    try:
        plan = _plan(
            used,
            planned,
            tag=tag,
            resume=resume,
            stale_after=stale_after,
            judged=judge_model is not None,
            max_attempts=max_attempts,
            sampling=agent_sampling or Sampling(),
        )
        if on_plan is not None:
            on_plan(plan)
        count = min(workers or os.cpu_count() or 1, max(len(plan.pending), 1))
        each, job_config = _worker_concurrency(concurrency, count, config or LLMConfig(), plan)
        jobs = [
            _WorkerJob(
                share,
                tag,
                used.url,
                each,
                judge_model,
                rubric,
                job_config,
                samples,
                agent_sampling,
                judge_sampling,
            )
            for share in (plan.pending[i::count] for i in range(count))
            if share
        ]
        started = time.perf_counter()
        outcomes: list[EpisodeOutcome] = []
        beats: dict[int, _Heartbeat] = {}
        progress = BatchProgress(total=len(plan.pending))
        started_ids: set[str] = set()
        finished_calls: list[int] = []

        def advance(**changes: Any) -> None:
            nonlocal progress
            progress = replace(progress, **changes, elapsed_s=time.perf_counter() - started)
            if on_progress is not None:
                on_progress(progress)

        def take(outcome: _Report) -> None:
            if isinstance(outcome, _Started):
                started_ids.add(outcome.episode_id)
                advance(started=len(started_ids))
                return
            if isinstance(outcome, _Heartbeat):
                # A dead worker's last word says nothing of the calls it had made.
                before = beats[outcome.pid].calls if outcome.pid in beats else 0
                beats[outcome.pid] = replace(outcome, calls=max(outcome.calls, before))
                advance(
                    in_flight=_in_all(beat.in_flight for beat in beats.values()),
                    calls=max(sum(beat.calls for beat in beats.values()), sum(finished_calls)),
                )
                return
            if isinstance(outcome, _WorkerStopped):
                raise BatchError(
                    f"a worker stopped: {outcome.error}. Its unfinished episodes are stored "
                    "as incomplete; fix the cause, then resume the batch (--resume)"
                )
            outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
            # An episode a dead worker never started still counts as started and ended.
            started_ids.add(outcome.episode_id)
            finished_calls.append(outcome.usage.calls)
            advance(
                started=len(started_ids),
                done=progress.done + (not outcome.failed),
                failed=progress.failed + outcome.failed,
                # Heartbeats lag a finished episode's calls by up to a beat.
                calls=max(progress.calls, sum(finished_calls)),
            )

        try:
            if executor is not None and jobs:
                executor(jobs, take, used, judged=judge_model is not None)
            elif len(jobs) == 1:
                _run_job(jobs[0], take, used)
            elif jobs:
                _spawn(jobs, take, used, judged=judge_model is not None)
        except BaseException as stop:
            # Terminated workers record nothing themselves.
            why = "Ctrl-C" if isinstance(stop, KeyboardInterrupt) else "an error"
            _mark_left_running(used, tag, [item.spec.episode_id for item in plan.pending], why)
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


def _worker_concurrency(
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


def _in_all(workers: Iterable[InFlight]) -> InFlight:
    """The requests in flight in all ``workers``: the sum, and the oldest of them."""
    busy = [w for w in workers if w.count]
    return InFlight(
        sum(w.count for w in busy),
        max((w.oldest_s for w in busy), default=0.0),
        sum(w.limit for w in busy),
    )


def _outcome(record: EpisodeRecord, judged: bool) -> EpisodeOutcome:
    verdict = record.verdict
    complete = record.status is EpisodeStatus.COMPLETE
    return EpisodeOutcome(
        record.episode_id,
        record.status,
        record.reason,
        record.usage,
        unrated=judged and complete and record.failed_or_unrated,
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
    store: EpisodeStore, episode_id: str, error: Exception, judged: bool
) -> EpisodeOutcome:
    """The outcome of an episode whose run or rating raised ``error``: as stored (``arun``
    ends a running episode ``failed`` on an error), with ``error`` as its reason."""
    reason = f"{type(error).__name__}: {error}"
    try:
        record = store.load(episode_id)
    except (StorageError, ValueError):  # it failed before anything was stored
        return EpisodeOutcome(episode_id, EpisodeStatus.FAILED, reason, Usage())
    outcome = _outcome(record, judged)
    complete = outcome.status is EpisodeStatus.COMPLETE
    return replace(outcome, reason=reason, unrated=judged and complete)


async def _run_share(
    job: _WorkerJob, store: EpisodeStore, report: Callable[[_Report], None]
) -> None:
    # Each episode's calls are stored with it; the worker's session only counts them.
    session = LLMSession(job.config, retain_calls=False)
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
            report(_Started(item.spec.episode_id))
            try:
                record = await play(item)
            except Exception as error:
                if fails_every_episode(error):
                    raise
                report(_outcome_of_error(store, item.spec.episode_id, error, judge is not None))
                return
            report(_outcome(record, judge is not None))

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
            report(_Heartbeat(os.getpid(), session.concurrency.in_flight(), session.call_count))

    beating = asyncio.create_task(heartbeat())
    try:
        async with asyncio.TaskGroup() as group:
            for item in job.episodes:
                group.create_task(one(item))
    finally:
        beating.cancel()
        # Its last beat may have counted requests that have since been answered.
        report(_Heartbeat(os.getpid(), InFlight(), session.call_count))


def _run_job(
    job: _WorkerJob, report: Callable[[_Report], None], store: EpisodeStore | None = None
) -> None:
    """Run ``job`` on ``store`` (else a connection of its own); an error is reported as
    :class:`_WorkerStopped` (a worker never raises into its parent)."""
    try:
        with contextlib.ExitStack() as stack:
            used = store if store is not None else stack.enter_context(connect(job.store_url))
            stack.enter_context(_collector_for_many_episodes())
            asyncio.run(_run_share(job, used, report))
    except BatchError:
        raise
    except Exception as error:  # reported to the parent, which fails with the message
        report(_WorkerStopped(_first_error(error)))


WORKER_GC_THRESHOLD = 10_000
"""Allocations between two young-generation collections in a worker (Python's default
is 700)."""


@contextlib.contextmanager
def _collector_for_many_episodes() -> Iterator[None]:
    """The garbage collector tuned for hundreds of episodes in flight, for the block:
    what is alive before it (modules, prompts, the store client) frozen out of every
    collection, and young collections 14 times rarer. With Python's defaults the
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


def _worker_main(job: _WorkerJob, outcomes: Any) -> None:
    """Entry point of a spawned worker: outcomes go to the parent's queue.

    Ctrl-C reaches every process of the terminal's group; the parent alone handles it
    (it stops the workers and records what they left), so a worker ignores SIGINT rather
    than dying with a traceback of its own.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _run_job(job, outcomes.put)


def _spawn(
    jobs: Sequence[_WorkerJob],
    take: Callable[[_Report], None],
    store: EpisodeStore,
    *,
    judged: bool,
) -> None:
    """Run ``jobs`` in worker processes, passing their outcomes to ``take``. A worker that
    dies leaves its unreported episodes to :func:`_orphaned`, at once."""
    context = (
        multiprocessing.get_context("fork")
        if _worker_start_method() == "fork"
        else multiprocessing.get_context("spawn")
    )
    results = context.Queue()
    processes = [
        context.Process(target=_worker_main, args=(job, results), daemon=True) for job in jobs
    ]
    for process in processes:
        process.start()
    owner = {item.spec.episode_id: index for index, job in enumerate(jobs) for item in job.episodes}
    waiting = set(owner)
    dead: set[int] = set()

    def receive(outcome: _Report) -> None:
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
                take(_Heartbeat(processes[index].pid or 0, InFlight()))  # nothing in flight now
                for episode_id in sorted(e for e in waiting if owner[e] == index):
                    waiting.discard(episode_id)
                    take(_orphaned(store, episode_id, processes[index].exitcode, judged))
        for process in processes:
            process.join()
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join()


def _worker_start_method() -> str:
    """How worker processes start: ``fork`` on Linux when this process runs one thread (a
    fork copies no other thread, so no lock another thread holds), sparing each worker the
    imports a ``spawn`` repeats (about half a second of CPU); else ``spawn``."""
    if sys.platform == "linux" and threading.active_count() == 1:
        return "fork"
    return "spawn"


def _orphaned(
    store: EpisodeStore, episode_id: str, exitcode: int | None, judged: bool
) -> EpisodeOutcome:
    """The outcome of an episode whose worker died before reporting it: marked
    ``incomplete`` if the worker left it running, else as stored (it may have ended just
    before), else never started."""
    died = f"its worker process died ({_exit_cause(exitcode)})"
    # It may have ended since the worker died; that is fine either way.
    with contextlib.suppress(StorageError):
        store.mark_incomplete(episode_id, f"interrupted: {died}")
    try:
        return _outcome(store.load(episode_id), judged)
    except (StorageError, ValueError):
        return EpisodeOutcome(episode_id, EpisodeStatus.INCOMPLETE, f"not started: {died}", Usage())


def _exit_cause(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-exitcode).name}"
    return f"exit code {exitcode}"


def _mark_left_running(store: EpisodeStore, tag: str, episode_ids: Sequence[str], why: str) -> None:
    """Mark ``incomplete`` those of this run's episodes (of batch ``tag``) that its stopped
    workers left ``running`` (a terminated worker records nothing itself)."""
    for episode in store.list_episodes(tag=tag, status=EpisodeStatus.RUNNING):
        if episode.pk in episode_ids:
            # It may have ended since it was listed; that is fine either way.
            with contextlib.suppress(StorageError):
                store.mark_incomplete(episode.pk, f"interrupted: its batch was stopped ({why})")
