"""`sotopia-are batch`: many LLM episodes, stored, resumable, across worker processes.

A thin wrapper over :func:`sotopia_are.studies.batch` (which says how ids, resume and
workers work): it parses the options, shows progress and prints the summary. Ctrl-C
exits 130 pointing at ``--resume``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sotopia_are.llm import InFlight
from sotopia_are.social import EpisodeStatus
from sotopia_are.studies import BatchPlan, BatchResult, EpisodeOutcome, read_specs
from sotopia_are.studies import batch as run_batch

from .common import (
    DEFAULT_REQUEST_ATTEMPTS,
    DEFAULT_TIMEOUT_S,
    AgentModelOption,
    ApiBaseOption,
    ApiKeyOption,
    DataDirOption,
    EvaluatorModelOption,
    ModelOption,
    OutputModeOption,
    RedisUrlOption,
    RequestAttemptsOption,
    RubricOption,
    TimeoutOption,
    agent_models,
    cli_errors,
    console,
    fail,
    llm_config,
    open_store,
    usage_line,
)
from .episodes import INTERRUPTED_EXIT, require_models

__all__ = ["batch"]


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
    max_attempts: Annotated[
        int,
        typer.Option(
            "--max-attempts",
            min=1,
            help="With --resume: an episode that failed or was interrupted this many times "
            "is not run again (it is listed with its reason).",
        ),
    ] = 3,
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
    request_attempts: RequestAttemptsOption = DEFAULT_REQUEST_ATTEMPTS,
    data_dir: DataDirOption = None,
    redis_url: RedisUrlOption = None,
) -> None:
    """Run many LLM episodes (SPECS x --repeat), stored under --tag, with a progress bar and
    a usage and cost summary; --resume skips what a previous run completed. Exits 1 if the
    batch leaves any episode unfinished (failed, interrupted, not rated, left to another
    run or given up after --max-attempts), saying how many and why; 130 on Ctrl-C."""
    with cli_errors():
        specs = read_specs(specs_path)
    everyone = sorted({name for spec in specs for name in spec.agent_names})
    models = agent_models(everyone, model, agent_model)
    for spec in specs:
        require_models(spec, models)
    judge_model = (evaluator_model or model) if evaluate else None
    if evaluate and judge_model is None:
        fail("no model for the judge: pass --evaluator-model MODEL (or --no-evaluate)")
    config = llm_config(
        api_base,
        api_key,
        output_mode=output_mode,
        timeout_s=timeout,
        request_attempts=request_attempts,
    )
    columns = (
        TextColumn("episodes"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        TimeElapsedColumn(),
        # Requests a stuck server holds show here, so the batch never looks frozen.
        TextColumn("{task.fields[in_flight]}"),
    )
    with (
        open_store(data_dir, redis_url) as store,
        cli_errors(),
        Progress(*columns, console=console, transient=False) as progress,
    ):
        task = progress.add_task("episodes", total=None, failed=0, in_flight="")
        failed = 0

        def started(plan: BatchPlan) -> None:
            progress.update(task, total=len(plan.pending))
            if plan.skipped:
                progress.console.print(
                    f"skipping {plan.skipped} episodes already complete (--resume)"
                )
            if plan.busy:
                progress.console.print(
                    f"leaving {len(plan.busy)} episodes to the run still playing them (an event "
                    f"in the last {stale_after:g} s; see --stale-after)"
                )
            if plan.given_up:
                progress.console.print(
                    f"not retrying {len(plan.given_up)} episodes started {max_attempts} times "
                    "or more (see --max-attempts):"
                )
                for episode_id, reason in plan.given_up.items():
                    progress.console.print(f"  given up: {episode_id}: {reason}", markup=False)

        def finished(outcome: EpisodeOutcome) -> None:
            nonlocal failed
            failed += outcome.failed
            progress.update(task, advance=1, failed=failed)

        def waiting(in_flight: InFlight) -> None:
            progress.update(task, in_flight=in_flight.describe())

        try:
            result = run_batch(
                specs,
                models,
                tag=tag or specs_path.stem,
                store=store,
                repeat=repeat,
                judge_model=judge_model,
                rubric=rubric,
                config=config,
                resume=resume,
                stale_after=stale_after,
                max_attempts=max_attempts,
                concurrency=concurrency,
                workers=workers,
                on_plan=started,
                on_outcome=finished,
                on_in_flight=waiting,
            )
        except KeyboardInterrupt:
            progress.stop()
            typer.echo("interrupted; rerun with --resume", err=True)
            raise typer.Exit(code=INTERRUPTED_EXIT) from None
    _summary(result)
    if result.failed:
        typer.echo(_unfinished_line(result), err=True)
        raise typer.Exit(code=1)


def _unfinished_line(result: BatchResult) -> str:
    """How many episodes the batch left unfinished, and why, in one line."""
    outcomes = result.outcomes
    causes = [
        (sum(o.status is EpisodeStatus.FAILED for o in outcomes), "failed"),
        (sum(o.status is EpisodeStatus.INCOMPLETE for o in outcomes), "interrupted"),
        (sum(o.unrated for o in outcomes), "not rated (the judge failed)"),
        (sum(o.status is EpisodeStatus.RUNNING for o in outcomes), "started by another run"),
        (len(result.plan.busy), "left to a run still playing them"),
        (len(result.plan.given_up), "given up after --max-attempts"),
    ]
    why = ", ".join(f"{count} {cause}" for count, cause in causes if count)
    return (
        f"{result.unfinished} of {len(result.plan.planned)} episodes unfinished: {why}; "
        "see the lines above, then rerun with --resume"
    )


def _summary(result: BatchResult) -> None:
    outcomes = result.outcomes
    usage = result.usage
    elapsed = result.elapsed_s
    complete = sum(o.status is EpisodeStatus.COMPLETE for o in outcomes)
    table = Table(title=f"batch {result.plan.tag}", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    rows = [
        ("episodes in the batch", str(len(result.plan.planned))),
        ("skipped (already complete)", str(result.plan.skipped)),
        ("ran: complete", str(complete)),
        ("ran: failed", str(len(outcomes) - complete)),
        ("judge failed (complete, not rated)", str(sum(o.unrated for o in outcomes))),
        ("rated, with judge warnings", str(sum(bool(o.judge_warnings) for o in outcomes))),
        ("worker processes", str(result.workers)),
        ("wall time", f"{elapsed:.1f} s"),
        ("episodes/s", f"{len(outcomes) / elapsed:.1f}" if elapsed > 0 else "-"),
        ("model calls/s", f"{usage.calls / elapsed:.1f}" if elapsed > 0 else "-"),
    ]
    for row in rows:
        table.add_row(*row)
    console.print(table)
    typer.echo(f"usage: {usage_line(usage)}")
    for outcome in outcomes:
        if outcome.unrated:
            typer.echo(f"not rated: {outcome.episode_id}: the judge failed (rerun with --resume)")
        elif outcome.failed:
            typer.echo(f"failed: {outcome.episode_id}: {outcome.reason}")
        for warning in outcome.judge_warnings:
            typer.echo(f"judge warning: {outcome.episode_id}: {warning}")
