"""How a study names its models: each agent's model, the judges, their sampling and how
models are called, from what a user gave (command-line options, environment variables or
Python values), and :class:`StudyConfig`, all of it as one value resolved once.

The rules live here, not in the command line, so a script resolving the same names gets
the same answers and the same errors: a :class:`~sotopia_are.studies.StudyInputError`
saying what to pass. The messages name the command line's options, which map one to one
to the arguments here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

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

from .errors import StudyInputError
from .flags import (
    DEFAULT_REQUEST_ATTEMPTS,
    DEFAULT_TIMEOUT_S,
    MODEL_ENV,
    STUDY_FLAGS,
)

__all__ = [
    "AGENT_SAMPLING_ENV",
    "API_BASE_ENV",
    "API_KEY_ENV",
    "DATA_DIR_ENV",
    "JUDGE_SAMPLING_ENV",
    "REQUEST_ATTEMPTS_ENV",
    "TIMEOUT_ENV",
    "TRANSPORT_ENV",
    "OutputMode",
    "StudyConfig",
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


class StudyConfig(BaseModel):
    """One study's configuration, resolved once: where its episodes are stored, the
    agents' models and sampling, the judges' models and sampling, its tag, how many
    episodes run at once and how every model is called (endpoint, transport, timeout,
    retries).

    Frozen. Build it in Python, or with :meth:`resolve` from given values over the
    environment variables (:data:`STUDY_FLAGS`); the command line's flags map one to one
    to its fields (``--judge-model`` is ``judge_model``). The verbs take it as ``study=``
    (:func:`~sotopia_are.studies.run`, :func:`~sotopia_are.studies.rate`,
    :func:`~sotopia_are.studies.rate_stored`, :func:`~sotopia_are.studies.batch`,
    :func:`~sotopia_are.studies.benchmark`); a keyword argument given to a verb wins over
    the study's field. The store is opened with :meth:`connect` and handed to the verbs.

    Example:
        ```python
        study = sa.StudyConfig(model="gpt-4o-mini", judge_model=["gpt-4o"], tag="pilot")
        record = sa.run(spec, study=study)
        ```
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: Path | None = None
    """The embedded Redis's directory (``None``: ``~/.local/share/sotopia-are``)."""
    redis_url: str | None = None
    """A Redis server (``None``: ``$REDIS_OM_URL``, else the embedded Redis)."""
    model: str | None = None
    """Every agent's model (a litellm name), and the judge's when no ``judge_model``."""
    agent_model: tuple[str, ...] = ()
    """One agent's model each, ``NAME=MODEL`` over ``model`` (a ``{name: model}``
    mapping is taken too)."""
    sampling: Sampling = Sampling()
    """The agents' sampling (``KEY=VALUE,…`` text is parsed)."""
    judge_model: tuple[str, ...] = ()
    """The judges' models, in order (one for the verbs that rate with one judge)."""
    judge_sampling: Sampling = DEFAULT_JUDGE_SAMPLING
    """The judges' sampling (``KEY=VALUE,…`` text is parsed over the default,
    temperature 0)."""
    evaluate: bool = True
    """Whether played episodes are rated."""
    rubric: str = "sotopia_eval"
    """The judges' rubric: a built-in one's name or a rubric file."""
    samples: int = Field(1, ge=1)
    """How many times each judge rates an episode (mean and spread)."""
    api_base: str | None = None
    """An OpenAI-compatible server every model is called at."""
    api_key: str | None = None
    """The key for ``api_base``."""
    output_mode: OutputMode = "auto"
    """How JSON answers are asked for."""
    timeout: float = Field(DEFAULT_TIMEOUT_S, ge=0.1)
    """Seconds one request may wait for its answer."""
    request_attempts: int = Field(DEFAULT_REQUEST_ATTEMPTS, ge=1)
    """Requests per model call when the server fails fast."""
    transport: TransportChoice = "auto"
    """How requests are sent: ``http``, ``litellm`` or ``auto``."""
    tag: str | None = None
    """The study's tag (``None``: each verb's default)."""
    concurrency: int | None = Field(None, ge=1)
    """Episodes at once (``None``: each verb's default)."""

    @field_validator("agent_model", "judge_model", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        if isinstance(value, str):
            return (value,)
        if isinstance(value, Mapping):
            return tuple(f"{name}={model}" for name, model in value.items())
        return value

    @field_validator("sampling", mode="before")
    @classmethod
    def _agent_sampling(cls, value: Any) -> Any:
        return Sampling.parse(value) if isinstance(value, str) else value

    @field_validator("judge_sampling", mode="before")
    @classmethod
    def _judge_sampling(cls, value: Any) -> Any:
        return (
            DEFAULT_JUDGE_SAMPLING.merged(Sampling.parse(value))
            if isinstance(value, str)
            else value
        )

    @classmethod
    def resolve(cls, env: Mapping[str, str] | None = None, **given: Any) -> StudyConfig:
        """The configuration of ``given`` values (a field's name each; ``None`` is not
        given), each field not given from its environment variable in ``env`` (default:
        ``os.environ``; see :data:`STUDY_FLAGS`), else its default. A value from either
        is checked as the flag's is; a :class:`StudyInputError` names the flag and its
        variable: ``--timeout (or $SOTOPIA_ARE_TIMEOUT) 'soon': …``."""
        unknown = sorted(set(given) - set(STUDY_FLAGS))
        if unknown:
            raise StudyInputError(f"no study setting {', '.join(unknown)}")
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for name, (_, variable) in STUDY_FLAGS.items():
            value = given.get(name)
            if value is None and variable is not None and env.get(variable):
                value = env[variable]
                if name == "judge_model":  # several, as the flag is given several times
                    value = value.split()
            if value is None:
                continue
            # Parsed here, not by the field, so that an error names the flag and variable.
            if name == "sampling" and isinstance(value, str):
                value = parse_sampling(value)
            elif name == "judge_sampling" and isinstance(value, str):
                value = judge_sampling(value)
            values[name] = value
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            item = error.errors()[0]
            name = str(item["loc"][0]) if item["loc"] else ""
            flag, variable = STUDY_FLAGS.get(name, (name, None))
            said = f"{flag} (or ${variable})" if variable else flag
            why = str(item["msg"]).removeprefix("Value error, ")
            raise StudyInputError(f"{said} {values.get(name)!r}: {why}") from None

    def agent_models(self, names: Sequence[str]) -> dict[str, str]:
        """Every one of ``names`` with its model (:func:`choose_agent_models`)."""
        return choose_agent_models(names, self.model, self.agent_model)

    def judge_names(self) -> list[str]:
        """The judges' models (:func:`judge_names`: ``judge_model``, else ``model``)."""
        return judge_names(self.judge_model, self.model)

    def judge_name(self) -> str:
        """The one judge's model (:func:`choose_judge`)."""
        return choose_judge(self.judge_model, self.model)

    def judges(self, session: LLMSession | None = None) -> list[LLMJudge]:
        """One judge per model of :meth:`judge_names`, with this study's rubric, samples
        and sampling, calling through ``session`` (default: :meth:`session`)."""
        return make_judges(
            self.judge_names(),
            session or self.session(),
            rubric=self.rubric,
            samples=self.samples,
            sampling=self.judge_sampling,
        )

    def judge(self, session: LLMSession | None = None, *, fallback: str | None = None) -> LLMJudge:
        """The one judge (:meth:`judge_name`, ``fallback`` when no model names one)."""
        name = choose_judge(self.judge_model, self.model or fallback)
        return make_judges(
            [name],
            session or self.session(),
            rubric=self.rubric,
            samples=self.samples,
            sampling=self.judge_sampling,
        )[0]

    def llm_config(self, concurrency: int | None = None) -> LLMConfig:
        """How every model is called (:func:`llm_config`); ``concurrency`` bounds the
        requests per endpoint (None: the LLM layer's default)."""
        return llm_config(
            api_base=self.api_base,
            api_key=self.api_key,
            concurrency=concurrency,
            transport=self.transport,
            output_mode=self.output_mode,
            timeout_s=self.timeout,
            request_attempts=self.request_attempts,
        )

    def session(self) -> LLMSession:
        """A new LLM session on :meth:`llm_config`."""
        return LLMSession(self.llm_config())

    def connect(self) -> EpisodeStore:
        """The study's store (:func:`~sotopia_are.storage.connect` on ``redis_url`` and
        ``data_dir``); close it when done (it is a context manager)."""
        return connect(self.redis_url, self.data_dir)
