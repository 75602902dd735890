"""`sotopia-are run`: one LLM episode from a spec file or stored profiles, stored and rated."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Annotated

import typer

from sotopia_are.llm import LLMSession
from sotopia_are.studies import spec_from_stored_profiles

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
    SamplesOption,
    TimeoutOption,
    agent_models,
    cli_errors,
    fail,
    llm_config,
    load_spec,
    open_store,
)
from .episodes import judge_for, llm_agents, play_here, print_record, respec, unusable

__all__ = ["run"]


def run(
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
    model: ModelOption = None,
    agent_model: AgentModelOption = None,
    evaluator_model: EvaluatorModelOption = None,
    evaluate: Annotated[
        bool, typer.Option("--evaluate/--no-evaluate", help="Rate the episode with the judge.")
    ] = True,
    rubric: RubricOption = "sotopia_eval",
    samples: SamplesOption = 1,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="Override the spec's max_turns.")
    ] = None,
    tag: Annotated[str, typer.Option("--tag", help="Tag the stored episode.")] = "run",
    api_base: ApiBaseOption = None,
    api_key: ApiKeyOption = None,
    output_mode: OutputModeOption = "auto",
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    request_attempts: RequestAttemptsOption = DEFAULT_REQUEST_ATTEMPTS,
    data_dir: DataDirOption = None,
    redis_url: RedisUrlOption = None,
) -> None:
    """Run one LLM-vs-LLM episode, store it (events streamed as they happen), print the
    transcript and the judge's scores. Exits 1 if the episode failed or the judge could
    not rate it, 130 on Ctrl-C (the episode is stored as incomplete)."""
    if (spec_file is None) == (env_id is None):
        fail("give a spec file or --env-id with --agent-ids (one of the two)")
    if env_id is not None and not agent_ids:
        fail("--env-id needs --agent-ids 'ID1,ID2'")
    with open_store(data_dir, redis_url) as store, cli_errors():
        if spec_file is not None:
            spec = load_spec(spec_file)
        else:
            assert env_id is not None and agent_ids is not None
            ids = [pk.strip() for pk in agent_ids.split(",") if pk.strip()]
            spec = spec_from_stored_profiles(store, env_id, ids)
        scenario_id = env_id or spec.episode_id
        # A fresh id per run: the same scenario may be run many times.
        spec = respec(
            spec,
            f"{spec.episode_id}-{uuid.uuid4().hex[:8]}",
            **({"max_turns": max_turns} if max_turns is not None else {}),
        )
        models = agent_models(spec.agent_names, model, agent_model)
        session = LLMSession(
            llm_config(
                api_base,
                api_key,
                output_mode=output_mode,
                timeout_s=timeout,
                request_attempts=request_attempts,
            )
        )
        agents = llm_agents(spec, models, session)
        judge_model = evaluator_model or model
        if evaluate and judge_model is None:
            fail("no model for the judge: pass --evaluator-model MODEL (or --no-evaluate)")
        judge = judge_for(judge_model if evaluate else None, session, rubric, samples)
        record = play_here(
            store, spec, agents, judge, tag=tag, models=models, scenario_id=scenario_id
        )
        print_record(record)
        typer.echo(f"stored as {spec.episode_id} in {store.location}")
        if unusable(record, judged=judge is not None):
            raise typer.Exit(code=1)
