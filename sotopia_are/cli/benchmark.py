"""`sotopia-are benchmark`: models under test against a partner on a task set, and the report.

A thin wrapper over :func:`sotopia_are.studies.benchmark` (which says how roles, seeds and
resume work): it picks the tasks (:func:`~sotopia_are.studies.select_tasks`), shows the
batch's progress as ``batch`` does, prints the report and writes it with ``--output``.
``--report-only`` rebuilds the report of a tag from the store. Ctrl-C exits 130 with what
the store holds, pointing at ``--resume``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sotopia_are import studies

from .batch import BatchReporter, ClusterOption, batch_on
from .common import cli_errors, console, fail, printable
from .options import (
    ConcurrencyOption,
    MaxAttemptsOption,
    MaxTurnsOption,
    ModelOptions,
    PreflightOption,
    RubricOption,
    SamplesOption,
    StoreOptions,
    WorkersOption,
    with_store,
    with_study_models,
)

__all__ = ["benchmark"]


@with_study_models
@with_store
def benchmark(
    models: ModelOptions,
    where: StoreOptions,
    tested: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            "-m",
            help="A model under test (repeatable); each plays every task in every role.",
            show_default=False,
        ),
    ] = None,
    partner: Annotated[
        list[str] | None,
        typer.Option(
            "--partner",
            help="The partner model playing the other agents (repeatable).",
            show_default=False,
        ),
    ] = None,
    tasks_file: Annotated[
        Path | None,
        typer.Option(
            "--tasks",
            help="A task set: JSONL of task_id/env_id/agent_ids, or SOTOPIA's "
            "env_agent_combo file (its profiles imported first).",
            show_default=False,
        ),
    ] = None,
    specs_file: Annotated[
        Path | None,
        typer.Option(
            "--specs",
            help="Episode or game specs as the tasks (a JSON or JSONL file, or a directory "
            "of them, e.g. examples/games/bargaining.json), instead of --tasks/--sample.",
            show_default=False,
        ),
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option(
            "--sample",
            min=1,
            help="Draw this many tasks: from --tasks, else from the stored profiles.",
            show_default=False,
        ),
    ] = None,
    related: Annotated[
        bool,
        typer.Option(
            "--related",
            help="Sample characters related as each scenario asks (relationship profiles).",
        ),
    ] = False,
    sample_seed: Annotated[int, typer.Option("--sample-seed", help="The draw's seed.")] = 0,
    seeds: Annotated[
        int, typer.Option("--seeds", min=1, help="Episodes per task, role and model.")
    ] = 1,
    tag: Annotated[str, typer.Option("--tag", help="The benchmark's tag.")] = "benchmark",
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Skip what this benchmark completed; rerun the rest."),
    ] = False,
    max_attempts: MaxAttemptsOption = 3,
    concurrency: ConcurrencyOption = None,
    workers: WorkersOption = None,
    rubric: RubricOption = "sotopia_eval",
    samples: SamplesOption = 1,
    max_turns: MaxTurnsOption = None,
    cluster: ClusterOption = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write report.json, results.csv and episodes.csv into this directory.",
            show_default=False,
        ),
    ] = None,
    report_only: Annotated[
        bool,
        typer.Option("--report-only", help="Run nothing: report on --tag from the store."),
    ] = False,
    preflight: PreflightOption = True,
) -> None:
    """Benchmark models (--model, repeatable) against a partner (--partner) on a task set
    (--tasks FILE and/or --sample N, or spec files: --specs), every role, --seeds times,
    rated by --judge-model; then print per model and dimension the mean and 95%
    bootstrap interval, wins, ties and losses against the partner, judge failures and
    repairs, tokens and cost. Games (--specs examples/games/...) are rated by their
    outcome without a --judge-model, and the report adds each model's win rate and mean
    payoff per role, with 95% bootstrap intervals. --resume continues a stopped run of
    the same --tag. Exits 1 if any episode is left unfinished, 2 if a model cannot be
    called as configured (nothing stored), 130 on Ctrl-C."""
    if report_only:
        # With --report-only, --judge-model chooses whose verdicts the report reads.
        chosen = list(dict.fromkeys(models.judge_model or []))
        if len(chosen) > 1:
            fail("--report-only reads one judge's verdicts: give --judge-model once")
        with where.open() as store, cli_errors():
            report = studies.benchmark_report(store, tag, judge_model=chosen[0] if chosen else None)
        _render(report, output, judge=chosen[0] if chosen else None)
        return
    if not tested or not partner:
        fail("name the models under test (--model MODEL) and the partner (--partner MODEL)")
    if specs_file is not None and (tasks_file is not None or sample is not None):
        fail("give the tasks as --specs FILE, or as --tasks/--sample (not both)")
    with cli_errors():
        specs = studies.read_specs(specs_file) if specs_file is not None else None
    games_only = specs is not None and all(spec.game is not None for spec in specs)
    if not models.judge_model and not games_only:
        fail("no model for the judge: pass --judge-model MODEL (only games need none)")
    study = models.study(
        where,
        tag=tag,
        rubric=rubric,
        samples=samples,
        concurrency=concurrency,
        evaluate=bool(models.judge_model),
    )
    with where.open() as store, cli_errors(), BatchReporter(tag) as progress:
        tasks = (
            specs
            if specs is not None
            else studies.select_tasks(
                store, path=tasks_file, count=sample, seed=sample_seed, related=related
            )
        )
        try:
            result = studies.benchmark(
                tasks,
                tested,
                partner,
                store=store,
                seeds=seeds,
                max_turns=max_turns,
                # On a cluster --concurrency is also each endpoint's limit across all nodes.
                config=study.llm_config(concurrency if cluster else None),
                resume=resume,
                max_attempts=max_attempts,
                workers=workers,
                on_plan=progress.plan,
                on_progress=progress.progress,
                run_batch=batch_on(cluster),
                preflight=preflight,
                study=study,
            )
        except KeyboardInterrupt:
            progress.interrupted(store, "benchmark")
    _render(result.report, output)
    BatchReporter.exit_if_unfinished(result.batch)


def _render(
    report: studies.BenchmarkReport, output: Path | None, *, judge: str | None = None
) -> None:
    typer.echo(f"benchmark {report.tag}: {len(report.rows)} episodes")
    sources = "; ".join(report.judges) or "none (no episode is rated)"
    chosen = (
        f"of judge {judge}"
        if judge is not None
        else "(another judge's: --report-only --judge-model MODEL)"
    )
    typer.echo(
        f"scores from {printable(sources)}: each episode's latest rated verdict "
        + printable(chosen)
    )
    typer.echo("scores of the model under test: mean [95% bootstrap interval]")
    _table(*report.dimension_table())
    _table(*report.counts_table())
    matrix = report.matrix()
    partners = sorted({partner for by_partner in matrix.values() for partner in by_partner})
    typer.echo("mean overall score: model under test (rows) by partner (columns)")
    cells = [
        [model, *("-" if row.get(p) is None else f"{row[p]:.2f}" for p in partners)]
        for model, row in matrix.items()
    ]
    _table(["model", *partners], cells)
    if report.games:
        typer.echo(
            "games: the model under test's win rate and mean payoff per role, from the "
            "outcome verdicts: mean [95% bootstrap interval]"
        )
        _table(*report.game_table())
    if output is not None:
        with cli_errors():
            written = report.write(output)
        typer.echo(f"report written: {', '.join(str(path) for path in written)}")


def _table(header: list[str], rows: list[list[str]]) -> None:
    table = Table()
    for index, name in enumerate(header):
        table.add_column(printable(name), justify="left" if index == 0 else "right")
    for row in rows:
        table.add_row(*(printable(cell) for cell in row))
    console.print(table)
