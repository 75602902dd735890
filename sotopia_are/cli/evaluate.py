"""`sotopia-are evaluate`: rate stored episodes (by id or tag; verdicts stored with them)
or a human-written script (its context from --spec or its own preamble)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

import sotopia_are as sa
from sotopia_are import studies

from .common import cli_errors, console, fail, printable, read_text
from .episodes import print_record
from .options import (
    ModelOptions,
    PreflightOption,
    RubricOption,
    SamplesOption,
    StoreOptions,
    with_judge,
    with_store,
)

__all__ = ["evaluate"]


def _sayer(panel: bool) -> Callable[[studies.RatingOutcome], None]:
    """Print each outcome as it comes, naming the judge when there are several."""

    def say(outcome: studies.RatingOutcome) -> None:
        episode = outcome.episode_id + (f" by {outcome.judge}" if panel else "")
        if outcome.rated:
            typer.echo(f"rated: {episode}")
        elif outcome.skipped:
            typer.echo(f"skipped: {episode}: {outcome.skipped}")
        else:
            why = printable(outcome.error) or "every judge sample failed"
            typer.echo(f"not rated: {episode}: {why}")

    return say


def _print_panel(record: sa.EpisodeRecord, judges: Sequence[sa.LLMJudge]) -> None:
    """The judges' aggregate: per dimension and agent, mean ± sd over n judges."""
    panel = studies.panel_scores(record, [sa.Verdict.key_for(judge) for judge in judges])
    if not panel:
        return
    typer.echo(f"Panel of {len(judges)} judges: mean ± sd (judges)")
    table = Table()
    table.add_column("dimension")
    for agent in panel:
        table.add_column(printable(agent), justify="right")
    for dimension in next(iter(panel.values())):
        cells = [panel[agent].get(dimension) for agent in panel]
        table.add_row(
            dimension,
            *("" if c is None else f"{c.mean:.2f} ± {c.sd:.2f} ({c.n})" for c in cells),
        )
    console.print(table)


@with_judge
@with_store
def evaluate(
    models: ModelOptions,
    where: StoreOptions,
    episode_ids: Annotated[
        list[str] | None,
        typer.Argument(help="Stored episodes to rate (or --tag, or --script).", show_default=False),
    ] = None,
    tag: Annotated[
        str | None,
        typer.Option("--tag", help="Rate every stored episode with this tag.", show_default=False),
    ] = None,
    script: Annotated[
        Path | None, typer.Option("--script", help="A human-written script file to rate instead.")
    ] = None,
    spec_file: Annotated[
        Path | None,
        typer.Option(
            "--spec",
            help="The script's context: an episode spec or background JSON (default: the "
            "script's own preamble, as in Sotopia's transcripts).",
            show_default=False,
        ),
    ] = None,
    agents: Annotated[
        str | None,
        typer.Option("--agents", "-a", help='The script\'s participants: "A,B" (checked).'),
    ] = None,
    store_script: Annotated[
        bool,
        typer.Option("--store", help="Store the rated script as an episode (tag 'script')."),
    ] = False,
    rubric: RubricOption = "sotopia_eval",
    samples: SamplesOption = 1,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Episodes rated at once.")
    ] = 8,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Rate again what this judge rated already, replacing its verdict (another "
            "judge or rubric always adds its own).",
        ),
    ] = False,
    preflight: PreflightOption = True,
) -> None:
    """Rate each agent's social goals with the LLM judge: stored episodes (ids or --tag;
    the verdict is added to each, episodes this judge rated are skipped, so a stopped
    run resumes) or a script file (--script FILE [--spec CONTEXT.json] [--store]). Give
    --judge-model several times for a panel: each judge's verdict is stored separately
    and one episode's panel mean ± sd is printed. Exits 1 if anything asked for could not
    be rated, 2 if a judge's model cannot be called as configured (nothing rated)."""
    if sum((bool(episode_ids), tag is not None, script is not None)) != 1:
        fail("give stored EPISODE_IDS, --tag TAG or --script FILE (one of the three)")
    study = models.study(where, rubric=rubric, samples=samples, concurrency=concurrency)
    with cli_errors():
        judges = study.judges(sa.LLMSession(study.llm_config(concurrency)))
    if script is not None:
        names = [n.strip() for n in agents.split(",") if n.strip()] if agents else None
        text = read_text(script)
        with where.open() as store, cli_errors():
            context = read_text(spec_file) if spec_file is not None else None
            try:
                spec = studies.script_context(text, context, names=names, episode_id=script.stem)
            except ValueError as error:
                fail(f"{script}: {error}" + ("" if spec_file else " (or pass --spec FILE)"))
            for note in studies.parse_script_notes(text, spec.agent_names).warnings:
                typer.echo(printable(str(note)), err=True)
            record = studies.rate_script(
                text,
                judges,
                spec,
                episode_id=script.stem,
                store=store if store_script else None,
                preflight=preflight,
            )
            print_record(record)
            if len(judges) > 1:
                _print_panel(record, judges)
            if store_script:
                typer.echo(f"stored as {record.episode_id} in {store.location}")
        if not all(verdict.rated for verdict in record.verdicts):
            raise typer.Exit(code=1)
        return
    with where.open() as store, cli_errors():
        ids = (
            studies.selected_episodes(store, tag=tag)
            if tag is not None
            else list(episode_ids or [])
        )
        if len(ids) == 1:
            studies.check_to_rate(store.load(ids[0]), judges, replace=replace)
        outcomes = studies.rate_stored(
            store,
            ids,
            judges,
            replace=replace,
            on_outcome=_sayer(len(judges) > 1),
            preflight=preflight,
            study=study,
        )
        if len(ids) == 1 and any(o.rated for o in outcomes):
            record = store.load(ids[0])
            print_record(record)
            if len(judges) > 1:
                _print_panel(record, judges)
            typer.echo(f"stored the verdict with {ids[0]} ({len(record.verdicts)} verdicts in all)")
    for each in judges:
        mine = [o for o in outcomes if o.judge == each.model]
        rated = sum(o.rated for o in mine)
        skipped = sum(bool(o.skipped) for o in mine)
        typer.echo(
            f"judge {each.model} ({each.rubric.name}): {rated} rated, {skipped} skipped, "
            f"{len(mine) - rated - skipped} not rated, of {len(mine)}"
        )
    rated = sum(o.rated for o in outcomes)
    skipped = sum(bool(o.skipped) for o in outcomes)
    if rated + skipped < len(outcomes) or (len(ids) == 1 and not rated):
        raise typer.Exit(code=1)
