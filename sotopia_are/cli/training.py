"""`sotopia-are training-data sft|preference OUT`: training data from rated episodes.

A command of its own, not an ``export`` option: ``export`` writes episodes (by id, tag or
all, as JSONL or ARE JSON) that ``import`` reads back; this writes examples for a trainer,
filtered per agent by model and judge score, with a manifest beside the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sotopia_are import training
from sotopia_are.training import DEFAULT_PREFERENCE_DIMENSION, TrainingKind

from .common import cli_errors, fail
from .options import StoreOptions, with_store

__all__ = ["training_data"]


@with_store
def training_data(
    where: StoreOptions,
    kind: Annotated[
        TrainingKind, typer.Argument(help="sft: chat examples; preference: DPO pairs.")
    ],
    output: Annotated[Path, typer.Argument(help="The JSONL file to write.")],
    tag: Annotated[
        str | None, typer.Option("--tag", help="Only episodes with this tag.", show_default=False)
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Only agents played by this model.", show_default=False),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Only this participant.", show_default=False)
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge",
            help="Scores of this judge (a model or a verdict key; default: each "
            "episode's latest rated verdict).",
            show_default=False,
        ),
    ] = None,
    min_goal: Annotated[
        float | None,
        typer.Option(
            "--min-goal",
            help="Only agents the judge gave at least this goal score.",
            show_default=False,
        ),
    ] = None,
    min_score: Annotated[
        list[str] | None,
        typer.Option(
            "--min-score",
            metavar="DIMENSION=VALUE",
            help="Only agents scored at least VALUE on DIMENSION (repeatable).",
            show_default=False,
        ),
    ] = None,
    dimension: Annotated[
        str, typer.Option("--dimension", help="The score that ranks preference pairs.")
    ] = DEFAULT_PREFERENCE_DIMENSION,
    min_gap: Annotated[
        float,
        typer.Option("--min-gap", help="Pairs' scores differ by more than this."),
    ] = 0.0,
    allow_empty: Annotated[
        bool,
        typer.Option(
            "--allow-empty", help="Write the files even with no example (else: error, exit 1)."
        ),
    ] = False,
) -> None:
    """Write training data from stored episodes: each agent's model calls as the exact
    messages it was sent and its action as the target (sft), or pairs of actions for the
    same prompt from episodes the judge scored differently (preference, for DPO). Only
    complete episodes; OUTPUT's manifest (source, judges, filters, counts) goes beside it.
    Nothing to write is an error saying why (exit 1, no file) unless --allow-empty."""
    minimums = {} if min_goal is None else {"goal": min_goal}
    for item in min_score or []:
        name, _, value = item.partition("=")
        try:
            minimums[name.strip()] = float(value)
        except ValueError:
            fail(f"--min-score takes DIMENSION=VALUE, e.g. goal=7; got {item!r}")
    with where.open() as store, cli_errors():
        manifest = training.export_training_data(
            store,
            output,
            kind,
            tag=tag,
            model=model,
            agent=agent,
            judge=judge,
            min_scores=minimums,
            dimension=dimension,
            min_gap=min_gap,
            allow_empty=allow_empty,
        )
    what = "examples" if kind is TrainingKind.sft else "pairs"
    judges = "; ".join(manifest.judges) or "none (unrated)"
    typer.echo(
        f"wrote {manifest.examples} {what} from {manifest.episodes_used} of "
        f"{manifest.episodes_read} episodes to {output} "
        f"(manifest: {training.manifest_path(output)}); "
        f"scores from judge {judges}"
    )
