"""`sotopia-are batch`: many LLM episodes, stored, resumable, across worker processes.

Every episode of a batch has a deterministic id (``stable_episode_id`` of the tag, the
spec's id, the models and the repetition), so ``--resume`` finds what a previous run of
the same batch completed and skips it. It reruns the failed and incomplete episodes, and
the ``running`` ones with no event for ``--stale-after`` seconds (a dead run left them;
they are marked ``incomplete`` first); more recently active ones belong to a run still
going and are left alone. With a judge, complete episodes that were never rated (the run
stopped between the last turn and the verdict) are rated from their stored log.

Ctrl-C stops the batch: the workers ignore SIGINT (the parent stops them), and the
parent marks this batch's episodes still ``running`` as ``incomplete`` and exits 130,
pointing at ``--resume``.

Why processes: litellm's own client costs a few milliseconds of CPU per call, which caps
one process at a few hundred calls a second however many episodes run concurrently. The
pending episodes are split across ``--workers`` processes (spawned: each has its own event
loop, LLM session and store connection). With the embedded Redis the workers connect to
the parent's server through its unix socket, so all of them write to one store.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import multiprocessing
import os
import queue
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sotopia_are.evaluation import Rubric
from sotopia_are.llm import OutputMode, Usage
from sotopia_are.social import EpisodeSpec
from sotopia_are.storage import (
    EpisodeStatus,
    EpisodeStore,
    StorageError,
    connect,
    stable_episode_id,
)
from sotopia_are.studies import arate, arun

from .common import (
    DEFAULT_TIMEOUT_S,
    AgentModelOption,
    ApiBaseOption,
    ApiKeyOption,
    DataDirOption,
    EvaluatorModelOption,
    ModelOption,
    OutputModeOption,
    RedisUrlOption,
    RubricOption,
    TimeoutOption,
    agent_models,
    cli_errors,
    console,
    describe_validation,
    fail,
    llm_session,
    open_store,
    read_text,
    run_async,
    usage_line,
)
from .episodes import (
    INTERRUPTED_EXIT,
    judge_for,
    llm_agents,
    require_models,
    respec,
    unusable,
)

__all__ = ["Outcome", "WorkerJob", "batch", "read_specs"]


@dataclass(frozen=True)
class Planned:
    """One episode of the batch: its spec (with its stable id) and its scenario's id;
    ``judge_only``: it is complete but unrated, so only the judge runs."""

    spec: EpisodeSpec
    scenario_id: str
    models: dict[str, str]
    judge_only: bool = False


@dataclass(frozen=True)
class WorkerJob:
    """What one worker runs (picklable, for spawned processes)."""

    episodes: list[Planned]
    tag: str
    redis_url: str | None
    data_dir: str | None
    concurrency: int
    judge_model: str | None
    rubric: str
    api_base: str | None
    api_key: str | None
    output_mode: OutputMode
    timeout_s: float


@dataclass(frozen=True)
class Outcome:
    """A finished episode as a worker reports it; ``error`` instead ends the worker.
    ``unrated``: the judge was asked but could not rate it; ``judge_warnings``: what is
    suspicious in its verdict."""

    episode_id: str = ""
    status: str = ""
    reason: str = ""
    usage: Usage = field(default_factory=Usage)
    error: str = ""
    unrated: bool = False
    judge_warnings: tuple[str, ...] = ()


def read_specs(path: Path) -> list[EpisodeSpec]:
    """The specs in ``path``: a JSONL file (one spec a line), a JSON file (a spec or a list
    of specs), or a directory of such files (``*.json``, ``*.jsonl``, not recursive)."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())
        if not files:
            fail(f"{path} holds no .json or .jsonl spec files")
        return [spec for file in files for spec in read_specs(file)]
    text = read_text(path)
    if path.suffix == ".jsonl":
        items = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
        return [_spec(f"{path}:{number}", line) for number, line in items]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        fail(f"{path}: not JSON: {error}")
    if isinstance(data, list):
        return [_spec(f"{path}[{index}]", json.dumps(item)) for index, item in enumerate(data)]
    return [_spec(str(path), text)]


def _spec(where: str, text: str) -> EpisodeSpec:
    try:
        return EpisodeSpec.model_validate_json(text)
    except ValidationError as error:
        fail(f"{where}: not a valid episode spec: {describe_validation(error)}")


def _plan(
    specs: Sequence[EpisodeSpec],
    repeat: int,
    tag: str,
    model: str | None,
    overrides: Sequence[str] | None,
) -> list[Planned]:
    everyone = sorted({name for spec in specs for name in spec.agent_names})
    chosen = agent_models(everyone, model, overrides)
    planned: list[Planned] = []
    for spec in specs:
        models = {name: chosen[name] for name in spec.agent_names if name in chosen}
        for repetition in range(repeat):
            episode_id = stable_episode_id(
                tag, spec.episode_id, json.dumps(models, sort_keys=True), str(repetition)
            )
            planned.append(
                Planned(
                    respec(spec, episode_id, seed=spec.seed + repetition), spec.episode_id, models
                )
            )
    if len({p.spec.episode_id for p in planned}) != len(planned):
        fail("two specs share an episode_id; give each spec of a batch its own")
    return planned


async def _run_share(
    job: WorkerJob, store: EpisodeStore, report: Callable[[Outcome], None]
) -> None:
    session = llm_session(
        job.api_base,
        job.api_key,
        concurrency=max(job.concurrency, 1),
        output_mode=job.output_mode,
        timeout_s=job.timeout_s,
    )
    judge = judge_for(job.judge_model, session, job.rubric)
    gate = asyncio.Semaphore(job.concurrency)

    async def one(item: Planned) -> None:
        async with gate:
            if item.judge_only and judge is not None:
                # Unrated: this judge's failed verdict, if any, gives way to a new try.
                stored = store.load(item.spec.episode_id)
                record = await arate(stored, judge, store=store, replace=True)
            else:
                record = await arun(
                    item.spec,
                    llm_agents(item.spec, item.models, session),
                    models=item.models,
                    judge=judge,
                    store=store,
                    tag=job.tag,
                    scenario_id=item.scenario_id,
                )
            verdict = record.verdict
            report(
                Outcome(
                    item.spec.episode_id,
                    record.status,
                    record.reason,
                    record.usage,
                    unrated=judge is not None
                    and unusable(record, judged=True)
                    and record.status is EpisodeStatus.COMPLETE,
                    judge_warnings=tuple(verdict.evaluation.warnings) if verdict else (),
                )
            )

    async with asyncio.TaskGroup() as group:
        for item in job.episodes:
            group.create_task(one(item))


def _run_worker(job: WorkerJob, report: Callable[[Outcome], None]) -> None:
    """Run ``job`` in this process; an error is reported as an :class:`Outcome` with
    ``error`` (a worker never raises into its parent)."""
    try:
        with connect(job.redis_url, job.data_dir) as store:
            run_async(_run_share(job, store, report))
    except Exception as error:  # reported to the parent, which fails with the message
        # An episode's error reaches here wrapped by the TaskGroup; report the first.
        while isinstance(error, ExceptionGroup) and error.exceptions:
            first = error.exceptions[0]
            if not isinstance(first, Exception):
                break
            error = first
        report(Outcome(error=f"{type(error).__name__}: {error}"))


def _worker_main(job: WorkerJob, outcomes: Any) -> None:
    """Entry point of a spawned worker: outcomes go to the parent's queue.

    Ctrl-C reaches every process of the terminal's group; the parent alone handles it
    (it stops the workers and records what they left), so a worker ignores SIGINT rather
    than dying with a traceback of its own.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _run_worker(job, outcomes.put)


def _worker_url(store: EpisodeStore, redis_url: str | None) -> str | None:
    # Workers join the parent's embedded server through its socket rather than each
    # starting one; with a server URL (or REDIS_OM_URL, inherited) they use that.
    if store.embedded is not None:
        return f"unix://{store.embedded.socket_path}"
    return redis_url


def _shares(episodes: list[Planned], workers: int) -> list[list[Planned]]:
    return [share for share in (episodes[i::workers] for i in range(workers)) if share]


def batch(
    specs_path: Annotated[
        Path,
        typer.Argument(
            help="Episode specs: a JSONL file, a JSON file (spec or list) or a directory.",
            metavar="SPECS",
        ),
    ],
    repeat: Annotated[int, typer.Option("--repeat", "-n", min=1, help="Episodes per spec.")] = 1,
    tag: Annotated[
        str | None,
        typer.Option(
            "--tag", help="The batch's tag (default: the SPECS file's name).", show_default=False
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Skip the episodes this batch already completed; rerun the failed and "
            "interrupted ones, and rate the complete ones never rated (with a judge).",
        ),
    ] = False,
    stale_after: Annotated[
        float,
        typer.Option(
            "--stale-after",
            min=0,
            help="With --resume: a running episode with no event for this many seconds is "
            "taken as left by a dead run and rerun; more recent ones are left to the run "
            "still playing them.",
        ),
    ] = 300.0,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Episodes at once, in all.")
    ] = 16,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            "-w",
            min=1,
            help="Worker processes (default: CPU cores).",
            show_default=False,
        ),
    ] = None,
    model: ModelOption = None,
    agent_model: AgentModelOption = None,
    evaluator_model: EvaluatorModelOption = None,
    evaluate: Annotated[
        bool, typer.Option("--evaluate/--no-evaluate", help="Rate each episode with the judge.")
    ] = True,
    rubric: RubricOption = "sotopia_eval",
    api_base: ApiBaseOption = None,
    api_key: ApiKeyOption = None,
    output_mode: OutputModeOption = "auto",
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    data_dir: DataDirOption = None,
    redis_url: RedisUrlOption = None,
) -> None:
    """Run many LLM episodes (SPECS x --repeat), stored under --tag, with a progress bar and
    a usage and cost summary; --resume skips what a previous run completed. Exits 1 if an
    episode failed or the judge could not rate one, 130 on Ctrl-C."""
    specs = read_specs(specs_path)
    batch_tag = tag or specs_path.stem
    planned = _plan(specs, repeat, batch_tag, model, agent_model)
    for item in planned:
        require_models(item.spec, item.models)
    judge_model = (evaluator_model or model) if evaluate else None
    if evaluate and judge_model is None:
        fail("no model for the judge: pass --evaluator-model MODEL (or --no-evaluate)")
    with cli_errors():
        Rubric.load(rubric)
    with open_store(data_dir, redis_url) as store, cli_errors():
        ids = {item.spec.episode_id for item in planned}
        busy: set[str] = set()
        unjudged: set[str] = set()
        if resume:
            store.mark_interrupted(tag=batch_tag, idle_for=stale_after)
            busy = set(store.episode_ids(tag=batch_tag, status=EpisodeStatus.RUNNING)) & ids
            complete = [
                episode
                for episode in store.list_episodes(tag=batch_tag, status=EpisodeStatus.COMPLETE)
                if episode.pk in ids
            ]
            if judge_model is not None:
                # No scores: never rated, or every judge sample failed.
                unjudged = {episode.pk for episode in complete if not episode.scores}
            done = {episode.pk for episode in complete} - unjudged
        else:
            existing = set(store.episode_ids(tag=batch_tag)) & ids
            if existing:
                fail(
                    f"batch {batch_tag!r} already has {len(existing)} of these episodes in "
                    f"{store.location}; pass --resume to skip the complete ones (and rerun the "
                    "others), or another --tag"
                )
            done = set()
        pending = [
            replace(item, judge_only=item.spec.episode_id in unjudged)
            for item in planned
            if item.spec.episode_id not in done | busy
        ]
        if busy:
            typer.echo(
                f"leaving {len(busy)} episodes to the run still playing them (an event in the "
                f"last {stale_after:g} s; see --stale-after)"
            )
        count = min(workers or os.cpu_count() or 1, max(len(pending), 1))
        per_worker = max(math.ceil(concurrency / count), 1)
        jobs = [
            WorkerJob(
                share,
                batch_tag,
                _worker_url(store, redis_url),
                str(data_dir) if data_dir else None,
                per_worker,
                judge_model,
                rubric,
                api_base,
                api_key,
                output_mode,
                timeout,
            )
            for share in _shares(pending, count)
        ]
        started = time.perf_counter()
        try:
            outcomes = _execute(jobs, len(pending), len(done))
        except KeyboardInterrupt:
            _mark_left_running(store, batch_tag, [item.spec.episode_id for item in pending])
            typer.echo("interrupted; rerun with --resume", err=True)
            raise typer.Exit(code=INTERRUPTED_EXIT) from None
        elapsed = time.perf_counter() - started
        _summary(batch_tag, len(planned), len(done), outcomes, elapsed, len(jobs))
        if any(outcome.status != EpisodeStatus.COMPLETE or outcome.unrated for outcome in outcomes):
            raise typer.Exit(code=1)


def _mark_left_running(store: EpisodeStore, tag: str, episode_ids: Sequence[str]) -> None:
    """Mark ``incomplete`` those of this run's episodes (of batch ``tag``) that its stopped
    workers left ``running`` (a terminated worker records nothing itself)."""
    for episode in store.list_episodes(tag=tag, status=EpisodeStatus.RUNNING):
        if episode.pk in episode_ids:
            # It may have ended since it was listed; that is fine either way.
            with contextlib.suppress(StorageError):
                store.mark_incomplete(episode.pk, "interrupted: its batch was stopped (Ctrl-C)")


def _execute(jobs: list[WorkerJob], pending: int, skipped: int) -> list[Outcome]:
    """Run the jobs (in this process when there is one, else one spawned process each),
    showing progress; :func:`fail` on a worker's error."""
    outcomes: list[Outcome] = []
    columns = (
        TextColumn("episodes"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("episodes", total=pending, failed=0)

        def take(outcome: Outcome) -> None:
            if outcome.error:
                fail(
                    f"a worker stopped: {outcome.error}. Its unfinished episodes are stored as "
                    "incomplete; fix the cause, then rerun with --resume"
                )
            outcomes.append(outcome)
            failed = sum(o.status != EpisodeStatus.COMPLETE or o.unrated for o in outcomes)
            progress.update(task, advance=1, failed=failed)

        if skipped:
            progress.console.print(f"skipping {skipped} episodes already complete (--resume)")
        if len(jobs) == 1:
            _run_worker(jobs[0], take)
        elif jobs:
            _spawn(jobs, pending, take)
    return outcomes


def _spawn(jobs: list[WorkerJob], pending: int, take: Callable[[Outcome], None]) -> None:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    processes = [
        context.Process(target=_worker_main, args=(job, results), daemon=True) for job in jobs
    ]
    for process in processes:
        process.start()
    received = 0
    try:
        while received < pending:
            try:
                outcome = results.get(timeout=1.0)
            except queue.Empty:
                # Outcomes put just before a worker exited are still in the queue.
                if not any(process.is_alive() for process in processes) and results.empty():
                    fail(
                        "the worker processes exited before finishing their episodes; rerun "
                        "with --resume"
                    )
                continue
            take(outcome)
            received += 1
        for process in processes:
            process.join()
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join()


def _summary(
    tag: str, total: int, skipped: int, outcomes: list[Outcome], elapsed: float, workers: int
) -> None:
    usage = Usage.total(o.usage for o in outcomes)
    complete = sum(o.status == EpisodeStatus.COMPLETE for o in outcomes)
    judge_failed = sum(o.unrated for o in outcomes)
    table = Table(title=f"batch {tag}", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    rows = [
        ("episodes in the batch", str(total)),
        ("skipped (already complete)", str(skipped)),
        ("ran: complete", str(complete)),
        ("ran: failed", str(len(outcomes) - complete)),
        ("judge failed (complete, not rated)", str(judge_failed)),
        ("rated, with judge warnings", str(sum(bool(o.judge_warnings) for o in outcomes))),
        ("worker processes", str(workers)),
        ("wall time", f"{elapsed:.1f} s"),
        ("episodes/s", f"{len(outcomes) / elapsed:.1f}" if elapsed > 0 else "-"),
        ("model calls/s", f"{usage.calls / elapsed:.1f}" if elapsed > 0 else "-"),
    ]
    for row in rows:
        table.add_row(*row)
    console.print(table)
    typer.echo(f"usage: {usage_line(usage)}")
    for outcome in outcomes:
        if outcome.status != EpisodeStatus.COMPLETE:
            typer.echo(f"failed: {outcome.episode_id}: {outcome.reason}")
        elif outcome.unrated:
            typer.echo(f"not rated: {outcome.episode_id}: the judge failed (rerun with --resume)")
        for warning in outcome.judge_warnings:
            typer.echo(f"judge warning: {outcome.episode_id}: {warning}")
