"""Configuration of the LLM layer: endpoint, limits, retries, output handling.

One documented way to reach any OpenAI-compatible server: a model string ``openai/<name>``
plus a base URL, given as ``LLMConfig.api_base`` or the ``SOTOPIA_ARE_API_BASE``
environment variable, and optionally a key (``LLMConfig.api_key`` or
``SOTOPIA_ARE_API_KEY``). Without either, litellm's own provider defaults and provider
variables (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``OLLAMA_API_BASE``…) apply. A
server at a base URL that wants no key (local vLLM, Ollama, llama.cpp) needs none here:
the transport sends it a placeholder when no key is given from any source.

A stuck server (one that accepts a request and never answers) is reported once
``retry.max_timeouts`` requests of a call have each waited ``timeout_s`` in vain (by
default one request of 120 s), whatever ``retry.max_attempts`` allows for failures that
come fast. The CLI sets ``timeout_s`` from ``--timeout`` / ``SOTOPIA_ARE_TIMEOUT`` and
``retry.max_attempts`` from ``--request-attempts`` / ``SOTOPIA_ARE_REQUEST_ATTEMPTS``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from sotopia_are.llm.structured import OutputMode

__all__ = [
    "API_BASE_ENV",
    "API_KEY_ENV",
    "REQUEST_ATTEMPTS_ENV",
    "TIMEOUT_ENV",
    "Endpoint",
    "LLMConfig",
    "RetryPolicy",
]

API_BASE_ENV = "SOTOPIA_ARE_API_BASE"
API_KEY_ENV = "SOTOPIA_ARE_API_KEY"
TIMEOUT_ENV = "SOTOPIA_ARE_TIMEOUT"
"""The CLI's variable for ``LLMConfig.timeout_s`` (``--timeout``)."""
REQUEST_ATTEMPTS_ENV = "SOTOPIA_ARE_REQUEST_ATTEMPTS"
"""The CLI's variable for ``RetryPolicy.max_attempts`` (``--request-attempts``)."""


class RetryPolicy(BaseModel):
    """Retries of transient failures: up to ``max_attempts`` requests in all.

    Without a ``Retry-After`` from the server, the wait before retry *n* is drawn
    uniformly from ``[0, min(max_backoff_s, initial_backoff_s * 2**n)]`` (exponential
    backoff, full jitter). With one, the wait is what the server asked plus up to
    ``initial_backoff_s`` of jitter; a server asking for more than ``max_retry_after_s``
    fails the call at once with a :class:`~sotopia_are.llm.errors.TransientLLMError`.

    A request that gets no answer within ``LLMConfig.timeout_s`` counts toward
    ``max_timeouts`` as well: after that many timed-out requests the call gives up with a
    ``TransientLLMError`` saying how long it waited. Timeouts get their own, smaller
    budget because a server that left one request unanswered for minutes rarely answers
    the same request faster the next time, while rate limits, 5xx and dropped connections
    fail fast and often clear up: six two-minute timeouts made a stuck server look like
    a frozen run for over twelve minutes.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=6, ge=1)
    initial_backoff_s: float = Field(default=1.0, ge=0)
    max_backoff_s: float = Field(default=60.0, ge=0)
    max_retry_after_s: float = Field(default=300.0, ge=0)
    max_timeouts: int = Field(default=1, ge=1)


class LLMConfig(BaseModel):
    """How calls are made.

    ``max_concurrency`` bounds requests in flight per endpoint (model + api_base) across
    the whole process. ``output_attempts`` is how many answers a structured call may get
    before :class:`~sotopia_are.llm.errors.GenerationError`. ``params`` are sent with every
    request (``temperature``, ``max_tokens``, ``seed``…). ``timeout_s`` bounds each request
    (raise it for a slow model, e.g. on a CPU; with ``retry.max_timeouts`` it also bounds
    how long a stuck server goes unreported).
    ``max_tokens`` is sent when neither ``params`` nor the caller (an agent's or judge's own
    budget) gives one, so no request leaves the answer's length to the server.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_base: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    timeout_s: float = Field(default=120.0, gt=0)
    max_concurrency: int = Field(default=16, ge=1)
    retry: RetryPolicy = RetryPolicy()
    output_attempts: int = Field(default=3, ge=1)
    output_mode: OutputMode = "auto"
    max_tokens: int = Field(default=1024, ge=1)
    params: dict[str, JsonValue] = {}

    def endpoint(
        self, model: str, *, api_base: str | None = None, api_key: str | None = None
    ) -> Endpoint:
        """Where ``model`` is called: explicit arguments, then this config, then the
        ``SOTOPIA_ARE_*`` environment variables, then litellm's provider defaults."""
        return Endpoint(
            model=model,
            api_base=api_base or self.api_base or os.environ.get(API_BASE_ENV) or None,
            api_key=api_key or self.api_key or os.environ.get(API_KEY_ENV) or None,
        )


@dataclass(frozen=True)
class Endpoint:
    """A model at a base URL; ``key`` identifies it for concurrency limits.

    ``api_key`` None means none was given: litellm reads the provider's variable, or at an
    ``api_base`` without one a placeholder is sent (see :mod:`sotopia_are.llm.transport`).
    """

    model: str
    api_base: str | None
    api_key: str | None = field(default=None, repr=False)

    @property
    def key(self) -> str:
        """``model@api_base`` (``model@default`` for the provider's own endpoint)."""
        return f"{self.model}@{self.api_base or 'default'}"
