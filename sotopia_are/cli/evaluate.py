"""`sotopia-are evaluate`: rate a stored episode (and store the verdict) or a
human-written script (parse → replay → judge), its context from --spec or its own preamble."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from sotopia_are.evaluation import LLMJudge, Rubric
from sotopia_are.llm import LLMSession
from sotopia_are.messages import ScriptBackground, ScriptParseError, parse_background
from sotopia_are.record import EpisodeRecord
from sotopia_are.social import EpisodeSpec, EpisodeStatus
from sotopia_are.studies import rate, rate_script

from .common import (
    DEFAULT_REQUEST_ATTEMPTS,
    DEFAULT_TIMEOUT_S,
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
    cli_errors,
    describe_validation,
    fail,
    llm_config,
    open_store,
    read_text,
)
from .episodes import print_record

__all__ = ["evaluate"]


def _context(path: Path, names: list[str] | None) -> EpisodeSpec:
    """The script's context from ``path``: an episode spec, or a ``ScriptBackground``
    (Sotopia's ``p1_*``/``p2_*`` fields too); ``names``, if given, must match it."""
    text = read_text(path)
    try:
        spec = EpisodeSpec.model_validate_json(text)
    except ValidationError as as_spec:
        try:
            background = ScriptBackground.model_validate_json(text)
        except ValidationError:
            fail(
                f"{path} is neither an episode spec nor a background: "
                f"{describe_validation(as_spec)}"
            )
        spec = EpisodeSpec.from_background(background, path.stem)
    if names is not None and names != spec.agent_names:
        fail(
            f"--agents {', '.join(names)} do not match the participants of {path}: "
            f"{', '.join(spec.agent_names)}"
        )
    return spec


# What a script's own context looks like, for the error when it has none.
_NEEDS_CONTEXT = (
    "pass --spec FILE (an episode spec or background JSON with the scenario, each agent's "
    "background and goal), or open the script with its context: 'Scenario: …', "
    "'Participants: A and B', then \"A's background: …\" and \"A's goal: …\" lines"
)


def _preamble_context(path: Path, text: str, names: list[str] | None) -> EpisodeSpec:
    """The script's context from its own preamble (see ``parse_background``), as
    Sotopia's transcripts carry it; ``names``, if given, must match it."""
    try:
        background = parse_background(text, names)
    except ScriptParseError as error:
        fail(f"cannot read the context of {path} (or pass --spec FILE): {error}")
    if background is None:
        fail(f"{path} has no context before its first turn: {_NEEDS_CONTEXT}")
    return EpisodeSpec.from_background(background, path.stem)


def evaluate(
    episode_id: Annotated[
        str | None,
        typer.Argument(help="A stored episode to rate (or use --script).", show_default=False),
    ] = None,
    script: Annotated[
        Path | None,
        typer.Option("--script", help="A human-written script file to rate instead."),
    ] = None,
    spec_file: Annotated[
        Path | None,
        typer.Option(
            "--spec",
            help="The script's context: an episode spec or background JSON with the "
            "scenario, backgrounds and goals (default: the script's own context preamble, "
            "as in Sotopia's transcripts).",
            show_default=False,
        ),
    ] = None,
    agents: Annotated[
        str | None,
        typer.Option(
            "--agents",
            "-a",
            help='The script\'s participants: "A,B" (default: those of its context; '
            "checked against it).",
        ),
    ] = None,
    evaluator_model: EvaluatorModelOption = None,
    model: ModelOption = None,
    rubric: RubricOption = "sotopia_eval",
    samples: SamplesOption = 1,
    api_base: ApiBaseOption = None,
    api_key: ApiKeyOption = None,
    output_mode: OutputModeOption = "auto",
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    request_attempts: RequestAttemptsOption = DEFAULT_REQUEST_ATTEMPTS,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Replace this judge's earlier verdict on the episode (by default a judge "
            "that already rated it is refused; another judge adds its verdict).",
        ),
    ] = False,
    data_dir: DataDirOption = None,
    redis_url: RedisUrlOption = None,
) -> None:
    """Rate each agent's social goals with the LLM judge: a stored episode (the verdict is
    stored with it) or a script file (--script FILE [--spec CONTEXT.json]; without --spec
    the context is read from the script's preamble)."""
    if (episode_id is None) == (script is None):
        fail("give a stored EPISODE_ID or --script FILE (one of the two)")
    judge_model = evaluator_model or model
    if judge_model is None:
        fail("no model for the judge: pass --evaluator-model MODEL (or --model MODEL)")
    with cli_errors():
        judge = LLMJudge(
            judge_model,
            Rubric.load(rubric),
            samples=samples,
            session=LLMSession(
                llm_config(
                    api_base,
                    api_key,
                    output_mode=output_mode,
                    timeout_s=timeout,
                    request_attempts=request_attempts,
                )
            ),
        )
    if script is not None:
        names = [n.strip() for n in agents.split(",") if n.strip()] if agents else None
        text = read_text(script)
        context = (
            _context(spec_file, names)
            if spec_file is not None
            else _preamble_context(script, text, names)
        )
        with cli_errors():
            record = rate_script(text, judge, context, episode_id=script.stem)
        print_record(record)
        _exit_if_unrated(record)
        return
    assert episode_id is not None
    with open_store(data_dir, redis_url) as store, cli_errors():
        status = store.get_episode(episode_id).status
        if status is not EpisodeStatus.COMPLETE:
            fail(
                f"episode {episode_id} is {status.value}, not complete: only a finished "
                "episode can be rated"
                + (
                    "; rerun it (batch --resume reruns failed and interrupted episodes)"
                    if status is not EpisodeStatus.RUNNING
                    else " (it is still being played, or its run died: see 'list')"
                )
            )
        record = rate(store.load(episode_id), judge, store=store, replace=replace)
        print_record(record)
        count = len(record.verdicts)
        typer.echo(f"stored the verdict with {episode_id} ({count} verdicts in all)")
        _exit_if_unrated(record)


def _exit_if_unrated(record: EpisodeRecord) -> None:
    """Exit 1 unless the verdict just given rated the episode."""
    if record.verdict is None or not record.verdict.rated:
        raise typer.Exit(code=1)
