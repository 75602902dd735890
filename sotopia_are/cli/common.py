"""Helpers shared by the CLI commands: errors, options, the store, models and files.

Exit codes of every command: 0 success, 1 a user or input error (one ``error: …`` line
on stderr, never a traceback) or an episode that failed or could not be rated, 2 a usage
error (Typer's own), 130 Ctrl-C, 141 the reader of the output went away (``| head``).
:func:`cli_errors` turns the errors the lower layers raise for bad input or an unusable
server into exit 1.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from sotopia_are.llm import (
    API_BASE_ENV,
    API_KEY_ENV,
    REQUEST_ATTEMPTS_ENV,
    TIMEOUT_ENV,
    LLMConfig,
    LLMError,
    OutputMode,
    RetryPolicy,
    Usage,
)
from sotopia_are.social import EpisodeSpec
from sotopia_are.storage import DATA_DIR_ENV, EpisodeStore, StorageError, connect
from sotopia_are.studies import BatchError

__all__ = [
    "BROKEN_PIPE_EXIT",
    "MODEL_ENV",
    "AgentModelOption",
    "ApiBaseOption",
    "ApiKeyOption",
    "DataDirOption",
    "EvaluatorModelOption",
    "ModelOption",
    "OutputModeOption",
    "RedisUrlOption",
    "RequestAttemptsOption",
    "RubricOption",
    "SamplesOption",
    "TimeoutOption",
    "agent_models",
    "cli_errors",
    "console",
    "describe_validation",
    "fail",
    "llm_config",
    "load_spec",
    "open_store",
    "print_scores",
    "printable",
    "read_text",
    "usage_line",
]

MODEL_ENV = "SOTOPIA_ARE_MODEL"
"""The environment variable giving the default model of every agent."""

EVALUATOR_MODEL_ENV = "SOTOPIA_ARE_EVALUATOR_MODEL"

DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        envvar=DATA_DIR_ENV,
        help="Data directory of the embedded Redis (default: ~/.local/share/sotopia-are). "
        "Ignored when REDIS_OM_URL or --redis-url names a server.",
        show_default=False,
    ),
]
RedisUrlOption = Annotated[
    str | None,
    typer.Option(
        "--redis-url",
        help="A Redis server (redis://, rediss://, unix://); default: $REDIS_OM_URL, "
        "else the embedded Redis.",
        show_default=False,
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        envvar=MODEL_ENV,
        help="The model of every agent (any litellm model, e.g. gpt-4o-mini, ollama/llama3, "
        "openai/<name> with --api-base).",
        show_default=False,
    ),
]
AgentModelOption = Annotated[
    list[str] | None,
    typer.Option(
        "--agent-model",
        help="One agent's model, as NAME=MODEL (repeatable); overrides --model.",
        show_default=False,
    ),
]
EvaluatorModelOption = Annotated[
    str | None,
    typer.Option(
        "--judge-model",
        "--evaluator-model",
        envvar=EVALUATOR_MODEL_ENV,
        help="The judge's model (default: --model); it may differ from the agents' (small "
        "agents, a strong judge).",
        show_default=False,
    ),
]
OutputModeOption = Annotated[
    OutputMode,
    typer.Option(
        "--output-mode",
        help="How JSON answers are requested: json_schema (the server enforces the schema), "
        "json_object, prompt (schema in the prompt only), or auto: json_schema with "
        "--api-base or when litellm knows the model supports it, falling back to json_object "
        "then prompt if the server rejects it.",
    ),
]
ApiBaseOption = Annotated[
    str | None,
    typer.Option(
        "--api-base",
        envvar=API_BASE_ENV,
        help="Base URL of an OpenAI-compatible server, e.g. http://localhost:11434/v1 "
        "(Ollama) or http://localhost:8000/v1 (vLLM); use the model name openai/<name>.",
        show_default=False,
    ),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar=API_KEY_ENV,
        help="The API key for --api-base (optional: local servers need none).",
        show_default=False,
        show_envvar=True,
    ),
]
DEFAULT_TIMEOUT_S = LLMConfig().timeout_s
TimeoutOption = Annotated[
    float,
    typer.Option(
        "--timeout",
        min=0.1,
        envvar=TIMEOUT_ENV,
        help="Seconds one model request may wait for its answer. A request that times out "
        "ends the call (a stuck server is reported this soon); raise it for a model on a "
        "CPU: a long judge answer from a small local model can take minutes.",
    ),
]
DEFAULT_REQUEST_ATTEMPTS = RetryPolicy().max_attempts
RequestAttemptsOption = Annotated[
    int,
    typer.Option(
        "--request-attempts",
        min=1,
        envvar=REQUEST_ATTEMPTS_ENV,
        help="Requests one model call may make when the server fails fast (rate limits, "
        "5xx, dropped connections), with backoff between them.",
    ),
]
RubricOption = Annotated[
    str,
    typer.Option("--rubric", help="A built-in rubric (sotopia_eval, goal_only) or a rubric file."),
]
SamplesOption = Annotated[
    int, typer.Option("--samples", min=1, help="How many times the judge rates (mean and spread).")
]

console = Console(highlight=False)
"""Standard output for tables and headings; plain text goes through ``typer.echo``."""


def fail(message: str) -> NoReturn:
    """Print ``error: message`` on stderr and exit with code 1."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` safe to print on a terminal: every character that is not printable (the
    ESC of ANSI sequences, newlines, carriage returns, bidi overrides, other control and
    format characters) is written as its Python escape (``\\x1b``, ``\\n``, ``\\u202e``);
    letters of every script stay as they are. ``keep_newlines`` keeps ``\\n`` (for text
    that is meant to span lines, like a transcript)."""
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() or (keep_newlines and char == "\n") else repr(char)[1:-1]
        for char in text
    )


def describe_validation(error: ValidationError) -> str:
    """A pydantic validation error on one line: ``field: problem; …``."""
    return "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or '(root)'}: {item['msg']}"
        for item in error.errors()
    )


@contextmanager
def cli_errors() -> Iterator[None]:
    """Turn the errors of bad input or an unusable server into :func:`fail`.

    Storage errors (an unreachable server, a missing episode), LLM configuration errors
    (bad key, unknown model), unreadable files and invalid data are the user's to fix;
    anything else is a bug and keeps its traceback.
    """
    try:
        yield
    except BrokenPipeError:
        _quiet_broken_pipe()
    except ValidationError as error:
        fail(describe_validation(error))
    except StorageError as error:
        # RecordNotFoundError is also a KeyError, whose str() adds quotes.
        fail(str(error.args[0]) if error.args else type(error).__name__)
    except (LLMError, ValueError, BatchError) as error:
        fail(str(error))
    except FileNotFoundError as error:
        fail(f"{error.filename}: no such file")
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        fail(f"{where}{error.strerror or error}")


BROKEN_PIPE_EXIT = 141
"""The exit code when the output's reader went away (128 + SIGPIPE, as a shell reports a
program that SIGPIPE killed, e.g. ``cat big | head``)."""


def _quiet_broken_pipe() -> NoReturn:
    """Exit :data:`BROKEN_PIPE_EXIT` without a message: the reader (``| head``) chose to
    stop. Standard output is pointed at /dev/null first, or Python's final flush of it
    would fail again and print a warning."""
    # A captured stdout (tests) has no file descriptor; nothing would flush to a pipe then.
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    raise typer.Exit(code=BROKEN_PIPE_EXIT)


@contextmanager
def open_store(data_dir: Path | None, redis_url: str | None) -> Iterator[EpisodeStore]:
    """The store on ``redis_url`` (else ``$REDIS_OM_URL``, else the embedded Redis in
    ``data_dir``), closed at the end; an unreachable server is :func:`fail` before any
    work starts."""
    with cli_errors():
        store = connect(redis_url, data_dir)
    try:
        yield store
    finally:
        store.close()


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; :func:`fail` naming the file if it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        fail(f"{path}: no such file")
    except OSError as error:
        fail(f"cannot read {path}: {error.strerror or error}")
    except UnicodeDecodeError as error:
        fail(f"{path} is not UTF-8 text: {error.reason} at byte {error.start}")


def load_spec(path: Path) -> EpisodeSpec:
    """The episode spec (``EpisodeSpec`` JSON, as in ``examples/scenarios/``) in ``path``."""
    text = read_text(path)
    try:
        return EpisodeSpec.model_validate_json(text)
    except ValidationError as error:
        fail(f"{path} is not a valid episode spec: {describe_validation(error)}")


def agent_models(
    names: Sequence[str], default: str | None, overrides: Sequence[str] | None
) -> dict[str, str]:
    """Each of ``names`` with its model: ``NAME=MODEL`` overrides, else ``default``.

    Agents with neither are left out. :func:`fail` for a malformed override or one naming
    nobody in ``names``.
    """
    chosen = dict.fromkeys(names, default) if default else {}
    for item in overrides or []:
        name, sep, model = item.partition("=")
        name, model = name.strip(), model.strip()
        if not sep or not name or not model:
            fail(f"--agent-model {item!r}: expected NAME=MODEL")
        if name not in names:
            fail(f"--agent-model {item!r}: unknown agent {name!r} (agents: {', '.join(names)})")
        chosen[name] = model
    return {name: model for name, model in chosen.items() if model}


def llm_config(
    api_base: str | None,
    api_key: str | None,
    *,
    concurrency: int = 16,
    output_mode: OutputMode = "auto",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    request_attempts: int = DEFAULT_REQUEST_ATTEMPTS,
) -> LLMConfig:
    """The :class:`LLMConfig` of the model options: ``api_base`` (else the model's
    provider default) with ``api_key`` (a keyless server at ``api_base`` needs none), JSON
    answers asked for in ``output_mode``, each request bounded by ``timeout_s``, each call
    by ``request_attempts`` requests."""
    return LLMConfig(
        api_base=api_base,
        api_key=api_key,
        max_concurrency=concurrency,
        output_mode=output_mode,
        timeout_s=timeout_s,
        retry=RetryPolicy(max_attempts=request_attempts),
    )


def usage_line(usage: Usage) -> str:
    """``N model calls, T tokens, $C`` (the cost only as far as it is known), and how many
    answers needed normalising or asking again."""
    if usage.calls == 0:
        return "no model calls"
    if usage.cost_usd is None:
        cost = "cost unknown (no price for the model)"
    elif usage.unpriced_calls:
        cost = f"${usage.cost_usd:.4f} + {usage.unpriced_calls} calls of unknown cost"
    else:
        cost = f"${usage.cost_usd:.4f}"
    # Always shown: with a real model, how many answers needed fixing is part of the result.
    fixed = (
        f"answers accepted after normalising their form: {usage.normalized_calls}, "
        f"after asking again: {usage.repaired_calls}"
    )
    return f"{usage.calls} model calls, {usage.total_tokens} tokens, {cost}; {fixed}"


def print_scores(scores: Mapping[str, Mapping[str, float]], title: str = "Scores") -> None:
    """A table of the dimension scores: one row per dimension, one column per agent
    (narrow enough for a terminal with any number of dimensions)."""
    if not scores:
        return
    dimensions: list[str] = []
    for by_dimension in scores.values():
        for name in by_dimension:
            if name not in dimensions and name != "overall_score":
                dimensions.append(name)
    table = Table(title=title, title_justify="left")
    table.add_column("dimension")
    for agent in scores:
        table.add_column(agent, justify="right")
    for name in [*dimensions, "overall_score"]:
        cells = [scores[agent].get(name) for agent in scores]
        table.add_row(
            name, *("" if cell is None else f"{cell:.2f}".rstrip("0").rstrip(".") for cell in cells)
        )
    console.print(table)
