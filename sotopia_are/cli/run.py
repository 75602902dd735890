"""`sotopia-are run`: one LLM episode from a spec file or stored profiles, stored and rated."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sotopia_are import studies

from .common import cli_errors, fail, load_spec
from .episodes import play_here, print_record, unusable
from .options import (
    EvaluateOption,
    MaxTurnsOption,
    ModelOptions,
    PreflightOption,
    RubricOption,
    SamplesOption,
    StoreOptions,
    with_models,
    with_store,
)

__all__ = ["run"]


@with_models
@with_store
def run(
    models: ModelOptions,
    where: StoreOptions,
    spec_file: Annotated[
        Path | None,
        typer.Argument(
            help="An episode spec (JSON, as in examples/scenarios/); or use --env-id.",
            show_default=False,
        ),
    ] = None,
    env_id: Annotated[
        str | None,
        typer.Option("--env-id", help="A stored EnvironmentProfile (instead of SPEC_FILE)."),
    ] = None,
    agent_ids: Annotated[
        str | None,
        typer.Option("--agent-ids", help='Stored AgentProfiles for --env-id: "ID1,ID2".'),
    ] = None,
    evaluate: EvaluateOption = True,
    rubric: RubricOption = "sotopia_eval",
    samples: SamplesOption = 1,
    max_turns: MaxTurnsOption = None,
    tag: Annotated[str, typer.Option("--tag", help="Tag the stored episode.")] = "run",
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print no turns as they happen, only the end.")
    ] = False,
    preflight: PreflightOption = True,
) -> None:
    """Run one LLM-vs-LLM episode, store it (events streamed as they happen), print each
    turn as it happens and the judge's scores. Exits 1 if the episode failed or the judge
    could not rate it, 2 if a model cannot be called as configured (nothing stored), 130 on
    Ctrl-C (the episode is stored as incomplete)."""
    if (spec_file is None) == (env_id is None):
        fail("give a spec file or --env-id with --agent-ids (one of the two)")
    if env_id is not None and not agent_ids:
        fail("--env-id needs --agent-ids 'ID1,ID2'")
    study = models.study(where, tag=tag, evaluate=evaluate, rubric=rubric, samples=samples)
    with where.open() as store, cli_errors():
        if spec_file is not None:
            spec = load_spec(spec_file)
        else:
            ids = [pk.strip() for pk in str(agent_ids).split(",") if pk.strip()]
            spec = studies.spec_from_stored_profiles(store, str(env_id), ids)
        # Played under a fresh id each run: the same file may be run many times.
        spec, scenario_id = studies.fresh_spec(
            spec, scenario_id=env_id, source=spec_file, max_turns=max_turns
        )
        record = play_here(
            store,
            spec,
            study=study,
            scenario_id=scenario_id,
            live=not quiet,
            header=f"{spec.episode_id}: {', '.join(spec.agent_names)}",
            preflight=preflight,
        )
        print_record(record, transcript=quiet)
        typer.echo(f"stored as {spec.episode_id} in {store.location}")
        if unusable(record, study.judge_name() if study.evaluate else None):
            raise typer.Exit(code=1)
