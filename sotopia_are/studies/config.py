"""How a study names its models: each agent's model, the judges, their sampling and how
models are called, from what a user gave (command-line options, environment variables or
Python values).

The rules live here, not in the command line, so a script resolving the same names gets
the same answers and the same errors: a :class:`~sotopia_are.studies.StudyInputError`
saying what to pass. The messages name the command line's options, which map one to one
to the arguments here.
"""

from __future__ import annotations

from collections.abc import Sequence

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
from sotopia_are.storage import DATA_DIR_ENV

from .errors import StudyInputError

__all__ = [
    "AGENT_SAMPLING_ENV",
    "API_BASE_ENV",
    "API_KEY_ENV",
    "DATA_DIR_ENV",
    "DEFAULT_REQUEST_ATTEMPTS",
    "DEFAULT_TIMEOUT_S",
    "JUDGE_MODEL_ENV",
    "JUDGE_SAMPLING_ENV",
    "MODEL_ENV",
    "REQUEST_ATTEMPTS_ENV",
    "TIMEOUT_ENV",
    "TRANSPORT_ENV",
    "OutputMode",
    "TransportChoice",
    "choose_agent_models",
    "choose_judge",
    "choose_judges",
    "judge_names",
    "judge_sampling",
    "llm_config",
    "make_judges",
    "parse_sampling",
]

MODEL_ENV = "SOTOPIA_ARE_MODEL"
"""The environment variable giving the default model of every agent."""

JUDGE_MODEL_ENV = "SOTOPIA_ARE_EVALUATOR_MODEL"
"""The environment variable giving the judge's model."""

DEFAULT_TIMEOUT_S = LLMConfig().timeout_s
"""Seconds one request may wait for its answer unless a study says otherwise."""

DEFAULT_REQUEST_ATTEMPTS = RetryPolicy().max_attempts
"""Requests per model call when the server fails fast, unless a study says otherwise."""


def parse_sampling(
    text: str, option: str = "--sampling", variable: str = AGENT_SAMPLING_ENV
) -> Sampling:
    """The sampling written ``KEY=VALUE,…`` in ``text`` (see
    :meth:`~sotopia_are.llm.Sampling.parse`); a :class:`StudyInputError` naming the
    option and its environment variable (either may have given it) for a bad item."""
    try:
        return Sampling.parse(text)
    except ValueError as error:
        raise StudyInputError(f"{option} (or ${variable}) {text!r}: {error}") from None


def judge_sampling(text: str) -> Sampling:
    """The judge's sampling: its default (temperature 0) with ``text`` (``KEY=VALUE,…``,
    from ``--judge-sampling`` or its variable) over it."""
    given = parse_sampling(text, "--judge-sampling", JUDGE_SAMPLING_ENV)
    return DEFAULT_JUDGE_SAMPLING.merged(given)


def llm_config(
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    concurrency: int | None = None,
    transport: TransportChoice = "auto",
    output_mode: OutputMode = "auto",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    request_attempts: int = DEFAULT_REQUEST_ATTEMPTS,
) -> LLMConfig:
    """How every call is made: the endpoint, transport, JSON answers, timeouts and
    retries; ``concurrency`` bounds requests per endpoint (None: the LLM layer's
    default, see ``LLMConfig.concurrency_for``)."""
    return LLMConfig(
        api_base=api_base,
        api_key=api_key,
        max_concurrency=concurrency,
        transport=transport,
        output_mode=output_mode,
        timeout_s=timeout_s,
        retry=RetryPolicy(max_attempts=request_attempts),
    )


def choose_agent_models(
    names: Sequence[str], model: str | None = None, overrides: Sequence[str] = ()
) -> dict[str, str]:
    """Every one of ``names`` with its model: ``model`` for everyone, an ``overrides``
    item ``NAME=MODEL`` (``--agent-model``) over it. A :class:`StudyInputError` for a
    malformed override or one naming no agent, or for an agent left without a model,
    saying what to pass."""
    chosen = dict.fromkeys(names, model) if model else {}
    for item in overrides:
        name, sep, override = (part.strip() for part in item.partition("="))
        if not sep or not name or not override:
            raise StudyInputError(f"--agent-model {item!r}: expected NAME=MODEL")
        if name not in names:
            raise StudyInputError(
                f"--agent-model {item!r}: unknown agent {name!r} (agents: {', '.join(names)})"
            )
        chosen[name] = override
    missing = [name for name in names if not chosen.get(name)]
    if missing:
        raise StudyInputError(
            f"no model for {', '.join(missing)}. Pass --model MODEL (or set {MODEL_ENV}) for "
            "every agent, or --agent-model 'NAME=MODEL'; for a local OpenAI-compatible "
            "server (vLLM, Ollama) use --model openai/<name> --api-base "
            "http://localhost:8000/v1. Without a model, 'sotopia-are demo' replays a "
            "human-written script."
        )
    return {name: str(chosen[name]) for name in names}


def judge_names(judge_models: str | Sequence[str] | None, model: str | None = None) -> list[str]:
    """Every one of ``judge_models`` (``--judge-model``), else ``model`` (the agents'
    ``--model``), duplicates dropped; a :class:`StudyInputError` if neither names one."""
    names = [judge_models] if isinstance(judge_models, str) else list(judge_models or [])
    if not names and model is not None:
        names = [model]
    if not names:
        raise StudyInputError(
            "no model for the judge: pass --judge-model MODEL (or --model MODEL, or --no-evaluate)"
        )
    return list(dict.fromkeys(names))


def choose_judge(judge_models: str | Sequence[str] | None, model: str | None = None) -> str:
    """The one judge's model (:func:`judge_names`); a :class:`StudyInputError` if several
    are given to a verb that rates with one judge."""
    names = judge_names(judge_models, model)
    if len(names) > 1:
        raise StudyInputError(
            f"this command rates with one judge, got --judge-model {' '.join(names)}; "
            "rate with more afterwards: sotopia-are evaluate ID --judge-model A "
            "--judge-model B"
        )
    return names[0]


def make_judges(
    names: Sequence[str],
    session: LLMSession,
    *,
    rubric: str = "sotopia_eval",
    samples: int = 1,
    sampling: Sampling = DEFAULT_JUDGE_SAMPLING,
) -> list[LLMJudge]:
    """One judge per model of ``names``, in order, each with the rubric named ``rubric``
    (built-in or a file, see :meth:`~sotopia_are.evaluation.Rubric.load`), calling through
    ``session``."""
    return [
        LLMJudge(name, Rubric.load(rubric), samples=samples, session=session, sampling=sampling)
        for name in names
    ]


def choose_judges(
    judge_models: str | Sequence[str] | None,
    model: str | None,
    session: LLMSession,
    *,
    rubric: str = "sotopia_eval",
    samples: int = 1,
    sampling: Sampling = DEFAULT_JUDGE_SAMPLING,
) -> list[LLMJudge]:
    """The judges of :func:`judge_names` (``--judge-model``, else ``--model``), built by
    :func:`make_judges`."""
    return make_judges(
        judge_names(judge_models, model), session, rubric=rubric, samples=samples, sampling=sampling
    )
