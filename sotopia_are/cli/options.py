"""Option groups several commands share, handed to a command as one value.

A command declares ``models: ModelOptions`` or ``where: StoreOptions``; :func:`with_models`
and :func:`with_store` put the group's options in its signature (Typer reads them from
there) and build the value from them, so each option is declared once.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

import sotopia_are as sa
from sotopia_are import studies
from sotopia_are.studies import flags

from .common import cli_errors

__all__ = [
    "ConcurrencyOption",
    "EvaluateOption",
    "MaxAttemptsOption",
    "MaxTurnsOption",
    "ModelOptions",
    "PreflightOption",
    "RubricOption",
    "SamplesOption",
    "StoreOptions",
    "WorkersOption",
    "with_judge",
    "with_models",
    "with_store",
    "with_study_models",
]


def _option(*names: str, **settings: Any) -> Any:
    """A Typer option; one with no default shows none."""
    return typer.Option(*names, show_default=settings.pop("show_default", False), **settings)


def _study_option(field: str, *aliases: str, **settings: Any) -> Any:
    """The option of the study's ``field``: its flag and environment variable are
    :data:`~sotopia_are.flags.STUDY_FLAGS`'s, so the command line and
    :meth:`~sotopia_are.studies.StudyConfig.resolve` read the same variable."""
    flag, variable = flags.STUDY_FLAGS[field]
    return _option(flag, *aliases, envvar=variable, **settings)


RubricOption = Annotated[
    str,
    typer.Option("--rubric", help="A built-in rubric (sotopia_eval, goal_only) or a rubric file."),
]
SamplesOption = Annotated[
    int, typer.Option("--samples", min=1, help="How many times the judge rates (mean and spread).")
]
MaxTurnsOption = Annotated[
    int | None, _option("--max-turns", min=1, help="Override the specs' max_turns.")
]
MaxAttemptsOption = Annotated[
    int,
    typer.Option(
        "--max-attempts",
        min=1,
        help="With --resume: do not rerun an episode that failed this many times.",
    ),
]
ConcurrencyOption = Annotated[
    int | None,
    _option(
        "--concurrency",
        "-c",
        min=1,
        help="Episodes at once, in all (default: 128 per worker for a model at --api-base, "
        "16 per worker at a provider's endpoint).",
    ),
]
WorkersOption = Annotated[
    int | None,
    _option(
        "--workers",
        "-w",
        min=1,
        help="Worker processes (default: the CPU cores + 1, at most a llama.cpp server's slots).",
    ),
]
PreflightOption = Annotated[
    bool,
    typer.Option(
        "--preflight/--no-preflight",
        help="Before anything is stored, check that every model can be called as "
        "configured (provider, key, server reachable, model served); a mistake exits 2.",
    ),
]
EvaluateOption = Annotated[
    bool, typer.Option("--evaluate/--no-evaluate", help="Rate each episode with the judge.")
]
_SAMPLING = (
    "as KEY=VALUE,…: temperature, top_p, max_tokens, seed (a study's: each request sends "
    "one drawn from it), presence_penalty, frequency_penalty, stop, logit_bias, top_k, "
    "min_p, repetition_penalty; extra.NAME=VALUE passes a provider's own parameter"
)
_HELP = {
    "model": "Every agent's model (a litellm name: gpt-4o-mini, ollama/llama3, openai/NAME "
    "with --api-base).",
    "agent_model": "One agent's model, NAME=MODEL (repeatable).",
    "sampling": f"The agents' sampling, {_SAMPLING} (default: the provider's).",
    "judge_model": "The judge's model (default: --model); evaluate takes it again for a "
    "panel of judges, each verdict stored separately.",
    "judge_sampling": f"The judge's sampling, {_SAMPLING}, over its default temperature=0.",
    "api_base": "An OpenAI-compatible server, e.g. http://localhost:8000/v1 (vLLM) or "
    "http://localhost:11434/v1 (Ollama); name the model openai/NAME.",
    "api_key": "The key for --api-base (local servers need none).",
    "output_mode": "How JSON answers are asked for: json_schema, json_object, prompt, or auto "
    "(json_schema where supported, falling back if the server refuses it).",
    "timeout": "Seconds one request may wait for its answer (raise it for a model on a CPU).",
    "attempts": "Requests per model call when the server fails fast (rate limits, 5xx).",
    "transport": "How requests are sent: http (a lean client, to an OpenAI-compatible "
    "--api-base), litellm, or auto (http for an openai/ model at --api-base, else litellm).",
}


@dataclass(frozen=True)
class ModelOptions:
    """The models of the agents and the judge, their sampling, and how they are called."""

    model: Annotated[str | None, _study_option("model", "-m", help=_HELP["model"])] = None
    agent_model: Annotated[
        list[str] | None, _study_option("agent_model", help=_HELP["agent_model"])
    ] = None
    sampling: Annotated[str, _study_option("sampling", help=_HELP["sampling"])] = ""
    judge_model: Annotated[
        list[str] | None,
        _study_option("judge_model", "--evaluator-model", help=_HELP["judge_model"]),
    ] = None
    judge_sampling: Annotated[
        str, _study_option("judge_sampling", help=_HELP["judge_sampling"])
    ] = ""
    api_base: Annotated[str | None, _study_option("api_base", help=_HELP["api_base"])] = None
    api_key: Annotated[str | None, _study_option("api_key", help=_HELP["api_key"])] = None
    output_mode: Annotated[
        flags.OutputMode,
        _study_option("output_mode", show_default=True, help=_HELP["output_mode"]),
    ] = "auto"
    timeout: Annotated[
        float,
        _study_option("timeout", min=0.1, show_default=True, help=_HELP["timeout"]),
    ] = flags.DEFAULT_TIMEOUT_S
    request_attempts: Annotated[
        int,
        _study_option("request_attempts", min=1, show_default=True, help=_HELP["attempts"]),
    ] = flags.DEFAULT_REQUEST_ATTEMPTS
    transport: Annotated[
        flags.TransportChoice,
        _study_option("transport", show_default=True, help=_HELP["transport"]),
    ] = "auto"

    # The rules are the library's (sotopia_are.studies.config); each method is one of
    # them on these options, its StudyInputError an `error: …` line.

    def agent_sampling(self) -> sa.Sampling:
        """The agents' sampling from ``--sampling`` (or its variable)."""
        with cli_errors():
            return studies.parse_sampling(self.sampling)

    def config(self, concurrency: int | None = None) -> sa.LLMConfig:
        """How every call is made (:meth:`StudyConfig.llm_config` of :meth:`study`);
        ``concurrency`` bounds requests per endpoint."""
        return self.study().llm_config(concurrency)

    def study(self, where: StoreOptions | None = None, **more: Any) -> studies.StudyConfig:
        """These options, the store's (``where``) and ``more`` of the command's own (its
        tag, evaluate, rubric, samples, concurrency) as the study's configuration: each
        option is the field of its name (its variable was read already)."""
        with cli_errors():
            return studies.StudyConfig.resolve(
                env={},
                data_dir=where.data_dir if where else None,
                redis_url=where.redis_url if where else None,
                model=self.model,
                agent_model=tuple(self.agent_model or ()),
                sampling=self.sampling,
                judge_model=self.judge_model,
                judge_sampling=self.judge_sampling,
                api_base=self.api_base,
                api_key=self.api_key,
                output_mode=self.output_mode,
                timeout=self.timeout,
                request_attempts=self.request_attempts,
                transport=self.transport,
                **more,
            )

    def agent_models(self, names: Sequence[str]) -> dict[str, str]:
        """Every one of ``names`` with its model (``--agent-model`` over ``--model``)."""
        with cli_errors():
            return studies.choose_agent_models(names, self.model, self.agent_model or [])

    def judge(
        self,
        session: sa.LLMSession,
        rubric: str = "sotopia_eval",
        samples: int = 1,
        *,
        fallback: str | None = None,
    ) -> sa.LLMJudge:
        """The judge on ``--judge-model`` (else ``--model``, else ``fallback``), for a
        command that rates with one."""
        with cli_errors():
            name = studies.choose_judge(self.judge_model, self.model or fallback)
            return studies.make_judges(
                [name],
                session,
                rubric=rubric,
                samples=samples,
                sampling=studies.judge_sampling(self.judge_sampling),
            )[0]


@dataclass(frozen=True)
class StoreOptions:
    """Where episodes are stored."""

    data_dir: Annotated[
        Path | None,
        _study_option(
            "data_dir",
            help="The embedded Redis's directory (default: ~/.local/share/sotopia-are).",
        ),
    ] = None
    redis_url: Annotated[
        str | None,
        _study_option(
            "redis_url",
            help="A Redis server (redis://, rediss://, unix://); default: $REDIS_OM_URL, "
            "else the embedded Redis.",
        ),
    ] = None

    @contextmanager
    def open(self) -> Iterator[sa.EpisodeStore]:
        """The store on ``--redis-url`` (else ``$REDIS_OM_URL``, else the embedded Redis in
        ``--data-dir``), closed at the end; an unreachable server fails before any work."""
        with cli_errors():
            store = sa.connect(self.redis_url, self.data_dir)
        try:
            yield store
        finally:
            store.close()


Command = TypeVar("Command", bound=Callable[..., Any])


def _grouped(
    name: str, group: type[Any], omit: frozenset[str] = frozenset()
) -> Callable[[Command], Command]:
    """A decorator putting ``group``'s fields (but those in ``omit``) in a command's
    signature in place of its parameter ``name``, and calling the command with
    ``group(**those options)``."""
    hints = inspect.get_annotations(group, eval_str=True)
    options = [
        inspect.Parameter(
            field.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=field.default,
            annotation=hints[field.name],
        )
        for field in fields(group)
        if field.name not in omit
    ]

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        kept = [p for p in signature.parameters.values() if p.name != name]

        @functools.wraps(command)
        def wrapper(**given: Any) -> Any:
            values = {option.name: given.pop(option.name) for option in options}
            return command(**given, **{name: group(**values)})

        parameters = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in kept] + options
        wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        return wrapper  # type: ignore[return-value]

    return decorate


with_models = _grouped("models", ModelOptions)
"""Give the command's ``models`` parameter the model options (see :class:`ModelOptions`)."""
with_judge = _grouped("models", ModelOptions, frozenset({"agent_model", "sampling"}))
"""Give the command's ``models`` parameter the options of the judge's model."""
with_study_models = _grouped("models", ModelOptions, frozenset({"model", "agent_model"}))
"""Give the command's ``models`` parameter every model option but the agents' models (a
study's command names those itself)."""
with_store = _grouped("where", StoreOptions)
"""Give the command's ``where`` parameter the store options (see :class:`StoreOptions`)."""
