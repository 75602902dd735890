"""The study's command-line flags, environment variables and defaults, importable alone.

The command line builds every option (and its ``--help``) from these without loading the
library: this module imports nothing of ours, so the values the lower layers own (the
variables' names, the output modes and transports, the timeout and attempts) are
restated here, and ``tests/studies/test_studies_flags.py`` holds them equal to those.
"""

from enum import StrEnum
from typing import Literal

__all__ = [
    "DEFAULT_REQUEST_ATTEMPTS",
    "DEFAULT_TIMEOUT_S",
    "JUDGE_MODEL_ENV",
    "MODEL_ENV",
    "STUDY_FLAGS",
    "ExportFormat",
    "ImportKind",
    "OutputMode",
    "StatusChoice",
    "TransportChoice",
]

MODEL_ENV = "SOTOPIA_ARE_MODEL"
"""The environment variable giving the default model of every agent."""

JUDGE_MODEL_ENV = "SOTOPIA_ARE_EVALUATOR_MODEL"
"""The environment variable giving the judge's model."""

DEFAULT_TIMEOUT_S = 120.0
"""Seconds one request may wait for its answer unless a study says otherwise
(:class:`~sotopia_are.llm.LLMConfig`'s ``timeout_s``)."""

DEFAULT_REQUEST_ATTEMPTS = 6
"""Requests per model call when the server fails fast, unless a study says otherwise
(:class:`~sotopia_are.llm.RetryPolicy`'s ``max_attempts``)."""

OutputMode = Literal["auto", "json_schema", "json_object", "prompt"]
"""How JSON answers are asked for (:data:`sotopia_are.llm.OutputMode`)."""

TransportChoice = Literal["auto", "http", "litellm"]
"""How requests are sent (:data:`sotopia_are.llm.TransportChoice`)."""

STUDY_FLAGS: dict[str, tuple[str, str | None]] = {
    "data_dir": ("--data-dir", "SOTOPIA_ARE_DATA_DIR"),
    "redis_url": ("--redis-url", None),  # $REDIS_OM_URL is read by connect() itself
    "model": ("--model", MODEL_ENV),
    "agent_model": ("--agent-model", None),
    "sampling": ("--sampling", "SOTOPIA_ARE_SAMPLING"),
    "judge_model": ("--judge-model", JUDGE_MODEL_ENV),
    "judge_sampling": ("--judge-sampling", "SOTOPIA_ARE_JUDGE_SAMPLING"),
    "evaluate": ("--evaluate", None),
    "rubric": ("--rubric", None),
    "samples": ("--samples", None),
    "api_base": ("--api-base", "SOTOPIA_ARE_API_BASE"),
    "api_key": ("--api-key", "SOTOPIA_ARE_API_KEY"),
    "output_mode": ("--output-mode", None),
    "timeout": ("--timeout", "SOTOPIA_ARE_TIMEOUT"),
    "request_attempts": ("--request-attempts", "SOTOPIA_ARE_REQUEST_ATTEMPTS"),
    "transport": ("--transport", "SOTOPIA_ARE_TRANSPORT"),
    "tag": ("--tag", None),
    "concurrency": ("--concurrency", None),
}
"""Each field of :class:`StudyConfig` with the command-line flag that sets it and the
environment variable that sets it when the flag is not given (``None``: no variable).
The command line's options take their variables from here, so they and
:meth:`StudyConfig.resolve` read the same ones."""


class ImportKind(StrEnum):
    """What an input file holds (``auto``: decided from its first object)."""

    auto = "auto"
    episodes = "episodes"
    agents = "agents"
    environments = "environments"
    relationships = "relationships"
    script = "script"


class ExportFormat(StrEnum):
    """How episodes are exported: ``jsonl`` records (events, calls, verdicts; they import
    back), or ``are`` scenario JSON (one document per episode)."""

    jsonl = "jsonl"
    are = "are"


class StatusChoice(StrEnum):
    """The ``--status`` filter's choices: :class:`~sotopia_are.EpisodeStatus`'s values."""

    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"
    INCOMPLETE = "incomplete"
