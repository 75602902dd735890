"""`sotopia-are batch`: many LLM episodes, stored, resumable, across worker processes.

Every episode of a batch has a deterministic id (``stable_episode_id`` of the tag, the
spec's id, the models and the repetition), so ``--resume`` finds what a previous run of
the same batch completed and skips it; episodes a dead run left ``running`` are marked
``incomplete`` first and run again.

Why processes: litellm's own client costs a few milliseconds of CPU per call, which caps
one process at a few hundred calls a second however many episodes run concurrently. The
pending episodes are split across ``--workers`` processes (spawned: each has its own event
loop, LLM session and store connection). With the embedded Redis the workers connect to
the parent's server through its unix socket, so all of them write to one store.
"""

from __future__ import annotations

import asyncio
import json
import math
import multiprocessing
import os
import queue
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sotopia_are.evaluation import LLMJudge, Rubric
from sotopia_are.social import EpisodeSpec, EpisodeUsage
from sotopia_are.storage import EpisodeRecorder, EpisodeStore, connect, stable_episode_id

from .common import (
    AgentModelOption,
    ApiBaseOption,
    ApiKeyOption,
    DataDirOption,
    EvaluatorModelOption,
    ModelOption,
    RedisUrlOption,
    RubricOption,
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
from .episodes import llm_agents, play, require_models

__all__ = ["Outcome", "WorkerJob", "batch", "read_specs"]


@dataclass(frozen=True)
class Planned:
    """One episode of the batch: its spec (with its stable id) and its scenario's id."""

    spec: EpisodeSpec
    scenario_id: str
    models: dict[str, str]


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


@dataclass(frozen=True)
class Outcome:
    """A finished episode as a worker reports it; ``error`` instead ends the worker."""

    episode_id: str = ""
    status: str = ""
    reason: str = ""
    usage: EpisodeUsage = field(default_factory=EpisodeUsage)
    error: str = ""


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
                    EpisodeSpec.model_validate(
                        {
                            **spec.model_dump(),
                            "episode_id": episode_id,
                            "seed": spec.seed + repetition,
                        }
                    ),
                    spec.episode_id,
                    models,
                )
            )
    if len({p.spec.episode_id for p in planned}) != len(planned):
        fail("two specs share an episode_id; give each spec of a batch its own")
    return planned


async def _run_share(
    job: WorkerJob, store: EpisodeStore, report: Callable[[Outcome], None]
) -> None:
    session = llm_session(job.api_base, job.api_key, concurrency=max(job.concurrency, 1))
    judge = (
        LLMJudge(job.judge_model, Rubric.load(job.rubric), session=session)
        if job.judge_model
        else None
    )
    gate = asyncio.Semaphore(job.concurrency)

    async def one(item: Planned) -> None:
        async with gate:
            recorder = EpisodeRecorder(
                store, tag=job.tag, models=item.models, evaluator_model=job.judge_model or ""
            )
            agents = llm_agents(item.spec, item.models, session)
            result, evaluated = await play(
                item.spec, agents, recorder, judge, scenario_id=item.scenario_id
            )
            usage = evaluated.usage if evaluated is not None else result.usage
            report(Outcome(item.spec.episode_id, result.status, result.reason, usage))

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
    """Entry point of a spawned worker: outcomes go to the parent's queue."""
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
        typer.Option("--resume", help="Skip the episodes this batch already completed."),
    ] = False,
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
    data_dir: DataDirOption = None,
    redis_url: RedisUrlOption = None,
) -> None:
    """Run many LLM episodes (SPECS x --repeat), stored under --tag, with a progress bar and
    a usage and cost summary; --resume skips what a previous run completed."""
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
        if resume:
            store.mark_interrupted(tag=batch_tag)
            done = store.completed_episode_ids(batch_tag) & ids
        else:
            existing = set(store.episode_ids(tag=batch_tag)) & ids
            if existing:
                fail(
                    f"batch {batch_tag!r} already has {len(existing)} of these episodes in "
                    f"{store.location}; pass --resume to skip the complete ones (and rerun the "
                    "others), or another --tag"
                )
            done = set()
        pending = [item for item in planned if item.spec.episode_id not in done]
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
            )
            for share in _shares(pending, count)
        ]
        started = time.perf_counter()
        outcomes = _execute(jobs, len(pending), len(done))
        elapsed = time.perf_counter() - started
        _summary(batch_tag, len(planned), len(done), outcomes, elapsed, len(jobs))
        if any(outcome.status != "completed" for outcome in outcomes):
            raise typer.Exit(code=1)


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
                fail(f"a worker stopped: {outcome.error}")
            outcomes.append(outcome)
            failed = sum(o.status != "completed" for o in outcomes)
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
                    fail("the worker processes exited before finishing their episodes")
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
    usage = EpisodeUsage(
        calls=sum(o.usage.calls for o in outcomes),
        prompt_tokens=sum(o.usage.prompt_tokens for o in outcomes),
        completion_tokens=sum(o.usage.completion_tokens for o in outcomes),
        cost_usd=sum(o.usage.cost_usd for o in outcomes),
        calls_without_cost=sum(o.usage.calls_without_cost for o in outcomes),
    )
    complete = sum(o.status == "completed" for o in outcomes)
    table = Table(title=f"batch {tag}", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    rows = [
        ("episodes in the batch", str(total)),
        ("skipped (already complete)", str(skipped)),
        ("ran: complete", str(complete)),
        ("ran: failed", str(len(outcomes) - complete)),
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
        if outcome.status != "completed":
            typer.echo(f"failed: {outcome.episode_id}: {outcome.reason}")
