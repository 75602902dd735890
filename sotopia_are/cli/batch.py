"""`sotopia-are batch`: many LLM episodes, stored, resumable, across worker processes.

A thin wrapper over :func:`sotopia_are.studies.batch` (which says how ids, resume and
workers work): it parses the options, shows progress and prints the summary. Ctrl-C
exits 130 with what the store holds, pointing at ``--resume``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

import sotopia_are as sa
from sotopia_are import studies

from .common import INTERRUPTED_EXIT, cli_errors, console
from .options import (
    ConcurrencyOption,
    EvaluateOption,
    MaxAttemptsOption,
    MaxTurnsOption,
    ModelOptions,
    PreflightOption,
    RubricOption,
    SamplesOption,
    StoreOptions,
    WorkersOption,
    with_models,
    with_store,
)

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["BatchReporter", "ClusterOption", "batch", "batch_on"]

ClusterOption = Annotated[
    str | None,
    typer.Option(
        "--cluster",
        help="Run the workers on the Ray cluster at this address (ray://HEAD:10001, or "
        "HEAD:PORT from a node of it); needs pip install 'sotopia-are[ray]' and a Redis "
        "server every node reaches (--redis-url); --concurrency then also bounds each "
        "endpoint's requests across the cluster.",
        show_default=False,
    ),
]

LOG_EVERY_S = 10.0
"""Not on a terminal, a progress line at least this often (and every tenth of the batch)."""

REDRAW_EVERY_S = 0.1
"""On a terminal, the bar is drawn again at most this often (by the updates themselves:
rich's own refresh thread would make worker processes start by spawn, not fork)."""


class BatchReporter:
    """Progress as it reads where the output goes: a live bar on a terminal, else one
    plain line every tenth of the batch or :data:`LOG_EVERY_S` (a job log, ``nohup``)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.logged_at = time.monotonic()
        self.logged_finished = 0
        self.drawn_at = 0.0

    def interrupted(self, store: sa.EpisodeStore, what: str = "batch") -> NoReturn:
        """After Ctrl-C: what the store holds of the batch, then exit 130."""
        self.__exit__()
        held = studies.stored_batch(store, self.tag).describe()
        typer.echo(f"interrupted; the store holds of {what} {self.tag}: {held}", err=True)
        typer.echo("rerun with --resume", err=True)
        raise typer.Exit(code=INTERRUPTED_EXIT)

    @staticmethod
    def exit_if_unfinished(result: studies.BatchResult) -> None:
        """Exit 1, saying how many episodes are unfinished and why, if any is."""
        if not result.failed:
            return
        why = ", ".join(f"{count} {cause}" for count, cause in studies.unfinished_causes(result))
        typer.echo(
            f"{result.unfinished} of {len(result.plan.planned)} episodes unfinished: {why}; "
            "see the lines above, then rerun with --resume",
            err=True,
        )
        raise typer.Exit(code=1)

    def __enter__(self) -> BatchReporter:
        if console.is_terminal:
            # Loaded here: a batch whose output is no terminal (a job log) draws no bar.
            from rich.progress import BarColumn, Progress, TextColumn

            self.bar = Progress(
                TextColumn("episodes"),
                BarColumn(),
                TextColumn("{task.fields[line]}"),
                console=console,
                auto_refresh=False,
            )
            self.bar.start()
            self.task = self.bar.add_task("episodes", total=None, line="starting workers…")
            self.bar.refresh()
        return self

    def __exit__(self, *_: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def say(self, line: str) -> None:
        if self.bar is not None:
            self.bar.console.print(line, markup=False, highlight=False)
        else:
            typer.echo(line)

    def plan(self, plan: studies.BatchPlan) -> None:
        for line in studies.describe_plan(plan):
            self.say(line)
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, total=len(plan.pending), refresh=True)

    def progress(self, now: studies.BatchProgress) -> None:
        if self.bar is not None and self.task is not None:
            redraw = time.monotonic() - self.drawn_at >= REDRAW_EVERY_S or now.finished == now.total
            if redraw:
                self.drawn_at = time.monotonic()
            self.bar.update(self.task, completed=now.finished, line=now.describe(), refresh=redraw)
            return
        step = max(now.total // 10, 1)
        due = time.monotonic() - self.logged_at >= LOG_EVERY_S
        if due or now.finished >= self.logged_finished + step or now.finished == now.total:
            if now.finished == self.logged_finished and not due:
                return
            self.logged_at, self.logged_finished = time.monotonic(), now.finished
            typer.echo(f"batch {self.tag}: {now.describe()}")


@with_models
@with_store
def batch(
    models: ModelOptions,
    where: StoreOptions,
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
        typer.Option("--tag", help="The batch's tag (default: SPECS's name).", show_default=False),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Skip what this batch completed; rerun the failed and interrupted "
            "episodes, rate the complete ones never rated.",
        ),
    ] = False,
    stale_after: Annotated[
        float,
        typer.Option(
            "--stale-after",
            min=0,
            help="With --resume: rerun a running episode with no event for this many seconds "
            "(its run died); leave more recent ones to their run.",
        ),
    ] = 300.0,
    max_attempts: MaxAttemptsOption = 3,
    concurrency: ConcurrencyOption = None,
    workers: WorkersOption = None,
    evaluate: EvaluateOption = True,
    rubric: RubricOption = "sotopia_eval",
    samples: SamplesOption = 1,
    max_turns: MaxTurnsOption = None,
    cluster: ClusterOption = None,
    preflight: PreflightOption = True,
) -> None:
    """Run many LLM episodes (SPECS x --repeat), stored under --tag, with progress and a
    usage and cost summary; --resume skips what a previous run completed. Exits 1 if the
    batch leaves any episode unfinished (failed, interrupted, not rated, left to another
    run or given up after --max-attempts), saying how many and why; 2 if a model cannot be
    called as configured (nothing stored); 130 on Ctrl-C."""
    with cli_errors():
        specs = studies.read_specs(specs_path)
        if max_turns is not None:
            specs = [spec.replace(max_turns=max_turns) for spec in specs]
    study = models.study(
        where,
        tag=tag or specs_path.stem,
        evaluate=evaluate,
        rubric=rubric,
        samples=samples,
        concurrency=concurrency,
    )
    with cli_errors():
        # Checked before the store is opened, as the batch would check them after.
        study.agent_models(sorted({name for spec in specs for name in spec.agent_names}))
        if study.evaluate:
            study.judge_name()
    tag = str(study.tag)
    with where.open() as store, cli_errors(), BatchReporter(tag) as report:
        try:
            result = batch_on(cluster)(
                specs,
                store=store,
                repeat=repeat,
                # On a cluster --concurrency is also each endpoint's limit across all nodes.
                config=study.llm_config(concurrency if cluster else None),
                resume=resume,
                stale_after=stale_after,
                max_attempts=max_attempts,
                workers=workers,
                on_plan=report.plan,
                on_progress=report.progress,
                preflight=preflight,
                study=study,
            )
        except KeyboardInterrupt:
            report.interrupted(store)
    _summary(result)
    BatchReporter.exit_if_unfinished(result)


def batch_on(cluster: str | None) -> Callable[..., studies.BatchResult]:
    """The library's batch: local, or on the Ray cluster at ``cluster`` (imported only then)."""
    if cluster is None:
        return studies.batch
    from sotopia_are.cluster import ray_batch

    return functools.partial(ray_batch, address=cluster)


def _summary(result: studies.BatchResult) -> None:
    rows = studies.summary_rows(result)
    width = max(len(what) for what, _ in rows)
    typer.echo(f"batch {result.plan.tag}")
    for what, value in rows:
        typer.echo(f"  {what.ljust(width)}  {value}")
    typer.echo(f"usage: {result.usage.describe()}")
    for outcome in result.outcomes:
        if outcome.unrated:
            typer.echo(f"not rated: {outcome.episode_id}: the judge failed (rerun with --resume)")
        elif outcome.failed:
            typer.echo(f"failed: {outcome.episode_id}: {outcome.reason}")
        for warning in outcome.judge_warnings:
            typer.echo(f"judge warning: {outcome.episode_id}: {warning}")
