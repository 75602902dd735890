"""`sotopia-are agreement`: per-dimension Pearson and Spearman correlations (bootstrap CIs)
between stored judges' scores and human ratings (SOTOPIA-π's CSV or per-episode JSON)."""

from __future__ import annotations

import csv
import io
import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from sotopia_are import studies

from .common import cli_errors, printable
from .options import StoreOptions, with_store

__all__ = ["agreement"]


class AgreementFormat(StrEnum):
    """How the reports are printed."""

    table = "table"
    json = "json"
    csv = "csv"


def _number(value: float | None) -> str:
    return "undefined" if value is None else f"{value:+.2f}"


def _interval(interval: tuple[float, float] | None) -> str:
    return "" if interval is None else f"[{interval[0]:+.2f}, {interval[1]:+.2f}]"


def _print_table(report: studies.AgreementReport) -> None:
    typer.echo(
        f"\njudge {printable(report.judge)}: {len(report.episodes)} episodes compared"
        + (f", {len(report.unrated)} labelled but not rated by it" if report.unrated else "")
    )
    # Plain fixed-width lines: a table that wraps at 80 columns splits its intervals.
    width = max([len("dimension"), *(len(d.dimension) for d in report.dimensions)])
    ci = f"{report.confidence:.0%} CI"
    typer.echo(f"{'dimension':<{width}}   n  pearson r  {ci:<16}  spearman rho  {ci}")
    for d in report.dimensions:
        line = (
            f"{d.dimension:<{width}} {d.n:>3}  {_number(d.pearson):>9}  "
            f"{_interval(d.pearson_ci):<16}  {_number(d.spearman):>12}  {_interval(d.spearman_ci)}"
        )
        typer.echo(line.rstrip())


_CSV_COLUMNS = (
    "judge",
    "dimension",
    "n",
    "pearson",
    "pearson_low",
    "pearson_high",
    "spearman",
    "spearman_low",
    "spearman_high",
)


def _csv(reports: list[studies.AgreementReport]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_CSV_COLUMNS)
    for report in reports:
        for d in report.dimensions:
            p_ci, s_ci = d.pearson_ci or ("", ""), d.spearman_ci or ("", "")
            r = "" if d.pearson is None else d.pearson
            rho = "" if d.spearman is None else d.spearman
            writer.writerow((report.judge, d.dimension, d.n, r, *p_ci, rho, *s_ci))
    return out.getvalue()


@with_store
def agreement(
    where: StoreOptions,
    labels: Annotated[
        list[Path],
        typer.Argument(
            help="Human ratings: SOTOPIA-π's human-evaluation CSV, or the .json ratings of "
            "human-rated transcripts.",
            show_default=False,
        ),
    ],
    tag: Annotated[
        str | None,
        typer.Option(
            "--tag",
            help="Compare the stored episodes with this tag (default: every labelled "
            "episode stored under its file name or episode id).",
            show_default=False,
        ),
    ] = None,
    judge_model: Annotated[
        list[str] | None,
        typer.Option(
            "--judge-model",
            help="Only this judge (model or verdict key; repeatable). Default: every judge "
            "that rated them, then their panel mean.",
            show_default=False,
        ),
    ] = None,
    resamples: Annotated[
        int, typer.Option("--resamples", min=100, help="Bootstrap resamples (of episodes).")
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="The bootstrap's random seed.")] = 0,
    form: Annotated[
        AgreementFormat, typer.Option("--format", help="table, json or csv.")
    ] = AgreementFormat.table,
) -> None:
    """How well the judge agrees with people: per dimension, n (episode, agent) pairs,
    Pearson's r and Spearman's rho with 95% bootstrap CIs (episodes resampled, seeded),
    between the stored verdicts and the human ratings of the same episodes. Store and rate
    the labelled transcripts first: 'sotopia-are import --kind script he_X.txt …' then
    'sotopia-are evaluate --tag script --judge-model A [--judge-model B]'. Exits 1 if the
    labels are malformed or share no rated episode."""
    with where.open() as store, cli_errors():
        reports = studies.stored_agreement(
            store, labels, tag=tag, judges=judge_model, resamples=resamples, seed=seed
        )
    if form is AgreementFormat.json:
        typer.echo(json.dumps([report.to_dict() for report in reports], indent=2))
    elif form is AgreementFormat.csv:
        typer.echo(_csv(reports), nl=False)
    else:
        for report in reports:
            _print_table(report)
        typer.echo("undefined: fewer than 2 pairs, or one side gave every pair the same score")
