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

from sotopia_are.evaluation import LLMJudge, Rubric
from sotopia_are.llm import (
    AGENT_SAMPLING_ENV,
    API_BASE_ENV,
    API_KEY_ENV,
    DEFAULT_JUDGE_SAMPLING,
    JUDGE_SAMPLING_ENV,
    REQUEST_ATTEMPTS_ENV,
    TIMEOUT_ENV,
    TRANSPORT_ENV,
    LLMConfig,
    LLMSession,
    OutputMode,
    RetryPolicy,
    Sampling,
    TransportChoice,
)
from sotopia_are.storage import DATA_DIR_ENV, EpisodeStore, connect

from .common import cli_errors, fail

__all__ = [
    "MODEL_ENV",
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

MODEL_ENV = "SOTOPIA_ARE_MODEL"
"""The environment variable giving the default model of every agent."""


def _option(*names: str, **settings: Any) -> Any:
    """A Typer option; one with no default shows none."""
    return typer.Option(*names, show_default=settings.pop("show_default", False), **settings)


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
    int | None, _option("--workers", "-w", min=1, help="Worker processes (default: CPU cores).")
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

    model: Annotated[
        str | None, _option("--model", "-m", envvar=MODEL_ENV, help=_HELP["model"])
    ] = None
    agent_model: Annotated[
        list[str] | None, _option("--agent-model", help=_HELP["agent_model"])
    ] = None
    sampling: Annotated[
        str, _option("--sampling", envvar=AGENT_SAMPLING_ENV, help=_HELP["sampling"])
    ] = ""
    judge_model: Annotated[
        list[str] | None,
        _option(
            "--judge-model",
            "--evaluator-model",
            envvar="SOTOPIA_ARE_EVALUATOR_MODEL",
            help=_HELP["judge_model"],
        ),
    ] = None
    judge_sampling: Annotated[
        str, _option("--judge-sampling", envvar=JUDGE_SAMPLING_ENV, help=_HELP["judge_sampling"])
    ] = ""
    api_base: Annotated[
        str | None, _option("--api-base", envvar=API_BASE_ENV, help=_HELP["api_base"])
    ] = None
    api_key: Annotated[
        str | None, _option("--api-key", envvar=API_KEY_ENV, help=_HELP["api_key"])
    ] = None
    output_mode: Annotated[
        OutputMode, _option("--output-mode", show_default=True, help=_HELP["output_mode"])
    ] = "auto"
    timeout: Annotated[
        float,
        _option("--timeout", min=0.1, envvar=TIMEOUT_ENV, show_default=True, help=_HELP["timeout"]),
    ] = LLMConfig().timeout_s
    request_attempts: Annotated[
        int,
        _option(
            "--request-attempts",
            min=1,
            envvar=REQUEST_ATTEMPTS_ENV,
            show_default=True,
            help=_HELP["attempts"],
        ),
    ] = RetryPolicy().max_attempts
    transport: Annotated[
        TransportChoice,
        _option("--transport", envvar=TRANSPORT_ENV, show_default=True, help=_HELP["transport"]),
    ] = "auto"

    def agent_sampling(self) -> Sampling:
        """The agents' sampling from ``--sampling`` (or its variable); :func:`fail` naming
        a bad item."""
        return _parsed(self.sampling, "--sampling", AGENT_SAMPLING_ENV)

    def judge_settings(self) -> Sampling:
        """The judge's sampling: its default with ``--judge-sampling`` (or its variable)
        over it."""
        given = _parsed(self.judge_sampling, "--judge-sampling", JUDGE_SAMPLING_ENV)
        return DEFAULT_JUDGE_SAMPLING.merged(given)

    def config(self, concurrency: int | None = None) -> LLMConfig:
        """How every call is made: the endpoint, transport, JSON answers, timeouts and
        retries; ``concurrency`` bounds requests per endpoint (None: the LLM layer's
        default, see ``LLMConfig.concurrency_for``)."""
        return LLMConfig(
            api_base=self.api_base,
            api_key=self.api_key,
            max_concurrency=concurrency,
            transport=self.transport,
            output_mode=self.output_mode,
            timeout_s=self.timeout,
            retry=RetryPolicy(max_attempts=self.request_attempts),
        )

    def agent_models(self, names: Sequence[str]) -> dict[str, str]:
        """Every one of ``names`` with its model (``--agent-model`` over ``--model``);
        :func:`fail` for a malformed override or one naming no agent, or for an agent left
        without a model, saying what to pass."""
        chosen = dict.fromkeys(names, self.model) if self.model else {}
        for item in self.agent_model or []:
            name, sep, model = (part.strip() for part in item.partition("="))
            if not sep or not name or not model:
                fail(f"--agent-model {item!r}: expected NAME=MODEL")
            if name not in names:
                fail(f"--agent-model {item!r}: unknown agent {name!r} (agents: {', '.join(names)})")
            chosen[name] = model
        missing = [name for name in names if not chosen.get(name)]
        if missing:
            fail(
                f"no model for {', '.join(missing)}. Pass --model MODEL (or set {MODEL_ENV}) for "
                "every agent, or --agent-model 'NAME=MODEL'; for a local OpenAI-compatible "
                "server (vLLM, Ollama) use --model openai/<name> --api-base "
                "http://localhost:8000/v1. Without a model, 'sotopia-are demo' replays a "
                "human-written script."
            )
        return {name: str(chosen[name]) for name in names}

    def judge(
        self, session: LLMSession, rubric: str = "sotopia_eval", samples: int = 1
    ) -> LLMJudge:
        """The judge on ``--judge-model`` (else ``--model``) with the rubric named ``rubric``."""
        return self._judge(self.judge_name(), session, rubric, samples)

    def judges(
        self, session: LLMSession, rubric: str = "sotopia_eval", samples: int = 1
    ) -> list[LLMJudge]:
        """One judge per ``--judge-model`` (else the one on ``--model``), in order."""
        return [self._judge(name, session, rubric, samples) for name in self.judge_names()]

    def _judge(self, name: str, session: LLMSession, rubric: str, samples: int) -> LLMJudge:
        return LLMJudge(
            name,
            Rubric.load(rubric),
            samples=samples,
            session=session,
            sampling=self.judge_settings(),
        )

    def judge_name(self) -> str:
        """The one judge's model; :func:`fail` if no model names one, or if several
        ``--judge-model`` are given to a command that rates with one judge."""
        names = self.judge_names()
        if len(names) > 1:
            fail(
                f"this command rates with one judge, got --judge-model {' '.join(names)}; "
                "rate with more afterwards: sotopia-are evaluate ID --judge-model A "
                "--judge-model B"
            )
        return names[0]

    def judge_names(self) -> list[str]:
        """Every ``--judge-model`` (else ``--model``), duplicates dropped; :func:`fail` if
        none is given."""
        given = self.judge_model
        # A command may set one name by hand (dataclasses.replace with a str).
        names = [given] if isinstance(given, str) else list(given or [])
        if not names and self.model is not None:
            names = [self.model]
        if not names:
            fail(
                "no model for the judge: pass --judge-model MODEL "
                "(or --model MODEL, or --no-evaluate)"
            )
        return list(dict.fromkeys(names))


def _parsed(text: str, option: str, variable: str) -> Sampling:
    try:
        return Sampling.parse(text)
    except ValueError as error:
        # Typer gives the option's value or the variable's alike; name both.
        fail(f"{option} (or ${variable}) {text!r}: {error}")


@dataclass(frozen=True)
class StoreOptions:
    """Where episodes are stored."""

    data_dir: Annotated[
        Path | None,
        _option(
            "--data-dir",
            envvar=DATA_DIR_ENV,
            help="The embedded Redis's directory (default: ~/.local/share/sotopia-are).",
        ),
    ] = None
    redis_url: Annotated[
        str | None,
        _option(
            "--redis-url",
            help="A Redis server (redis://, rediss://, unix://); default: $REDIS_OM_URL, "
            "else the embedded Redis.",
        ),
    ] = None

    @contextmanager
    def open(self) -> Iterator[EpisodeStore]:
        """The store on ``--redis-url`` (else ``$REDIS_OM_URL``, else the embedded Redis in
        ``--data-dir``), closed at the end; an unreachable server fails before any work."""
        with cli_errors():
            store = connect(self.redis_url, self.data_dir)
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
