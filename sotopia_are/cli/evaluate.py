"""`sotopia-are evaluate`: rate stored episodes (by id or tag; verdicts stored with them)
or a human-written script (its context from --spec or its own preamble)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sotopia_are.evaluation import LLMJudge
from sotopia_are.llm import LLMSession
from sotopia_are.messages import parse_script_notes
from sotopia_are.record import EpisodeRecord, Verdict
from sotopia_are.social import EpisodeStatus
from sotopia_are.studies import (
    RatingOutcome,
    rate_script,
    rate_stored,
    script_context,
    selected_episodes,
)

from .common import cli_errors, fail, printable, read_text
from .episodes import print_record
from .options import (
    ModelOptions,
    RubricOption,
    SamplesOption,
    StoreOptions,
    with_judge,
    with_store,
)

__all__ = ["evaluate"]


def _say(outcome: RatingOutcome) -> None:
    if outcome.rated:
        typer.echo(f"rated: {outcome.episode_id}")
    elif outcome.skipped:
        typer.echo(f"skipped: {outcome.episode_id}: {outcome.skipped}")
    else:
        why = printable(outcome.error) or "every judge sample failed"
        typer.echo(f"not rated: {outcome.episode_id}: {why}")


def _check_one(record: EpisodeRecord, judge: LLMJudge, replace: bool) -> None:
    """:func:`fail` saying what to do if the one episode asked for cannot be rated."""
    status = record.status
    if status is EpisodeStatus.COMPLETE:
        if not replace:  # ValueError: this judge rated it already
            record.check_new_verdict(Verdict.key_for(judge))
        return
    rerun = (
        "; rerun it (batch --resume reruns failed and interrupted episodes)"
        if status is not EpisodeStatus.RUNNING
        else " (it is still being played, or its run died: see 'list')"
    )
    fail(
        f"episode {record.episode_id} is {status.value}, not complete: only a finished "
        f"episode can be rated{rerun}"
    )


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
) -> None:
    """Rate each agent's social goals with the LLM judge: stored episodes (ids or --tag;
    the verdict is added to each, episodes this judge rated are skipped, so a stopped
    run resumes) or a script file (--script FILE [--spec CONTEXT.json] [--store]). Exits
    1 if anything asked for could not be rated."""
    if sum((bool(episode_ids), tag is not None, script is not None)) != 1:
        fail("give stored EPISODE_IDS, --tag TAG or --script FILE (one of the three)")
    with cli_errors():
        judge = models.judge(LLMSession(models.config(concurrency)), rubric, samples)
    if script is not None:
        names = [n.strip() for n in agents.split(",") if n.strip()] if agents else None
        text = read_text(script)
        with where.open() as store, cli_errors():
            context = read_text(spec_file) if spec_file is not None else None
            try:
                spec = script_context(text, context, names=names, episode_id=script.stem)
            except ValueError as error:
                fail(f"{script}: {error}" + ("" if spec_file else " (or pass --spec FILE)"))
            for note in parse_script_notes(text, spec.agent_names).warnings:
                typer.echo(printable(str(note)), err=True)
            record = rate_script(
                text, judge, spec, episode_id=script.stem, store=store if store_script else None
            )
            print_record(record)
            if store_script:
                typer.echo(f"stored as {record.episode_id} in {store.location}")
        if record.verdict is None or not record.verdict.rated:
            raise typer.Exit(code=1)
        return
    with where.open() as store, cli_errors():
        ids = selected_episodes(store, tag=tag) if tag is not None else list(episode_ids or [])
        if len(ids) == 1:
            _check_one(store.load(ids[0]), judge, replace)
        outcomes = rate_stored(
            store, ids, judge, concurrency=concurrency, replace=replace, on_outcome=_say
        )
        if len(ids) == 1 and outcomes[0].rated:
            record = store.load(ids[0])
            print_record(record)
            typer.echo(f"stored the verdict with {ids[0]} ({len(record.verdicts)} verdicts in all)")
    rated = sum(o.rated for o in outcomes)
    skipped = sum(bool(o.skipped) for o in outcomes)
    typer.echo(
        f"judge {judge.model} ({judge.rubric.name}): {rated} rated, {skipped} skipped, "
        f"{len(outcomes) - rated - skipped} not rated, of {len(outcomes)}"
    )
    if rated + skipped < len(outcomes) or (len(ids) == 1 and not rated):
        raise typer.Exit(code=1)
