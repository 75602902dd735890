"""Configuration of the LLM layer: endpoint, limits, retries, output handling.

One documented way to reach any OpenAI-compatible server: a model string ``openai/<name>``
plus a base URL, given as ``LLMConfig.api_base`` or the ``SOTOPIA_ARE_API_BASE``
environment variable, and optionally a key (``LLMConfig.api_key`` or
``SOTOPIA_ARE_API_KEY``). Without either, litellm's own provider defaults and provider
variables (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``OLLAMA_API_BASE``…) apply. A
server at a base URL that wants no key (local vLLM, Ollama, llama.cpp) needs none here:
the transport sends it a placeholder when no key is given from any source.

``LLMConfig.transport`` says how requests go out: ``auto`` (the default) sends an
``openai/`` (or ``hosted_vllm/``) model at a base URL over the lean HTTP client
(:mod:`sotopia_are.llm.http_transport`, a fraction of litellm's CPU per call) and every
named provider's own endpoint through litellm; ``litellm`` sends everything through
litellm; ``http`` sends every model at a base URL over HTTP.

Requests in flight are bounded per endpoint and process (``LLMConfig.max_concurrency``);
left unset, the bound is :data:`DEFAULT_LOCAL_CONCURRENCY` (128) for a model at a base URL,
which a server batching requests (vLLM, SGLang) needs to be busy, and
:data:`DEFAULT_HOSTED_CONCURRENCY` (16) at a provider's own endpoint, whose rate limits a
first request burst should not hit. Under that ceiling the limit starts at
:data:`DEFAULT_INITIAL_CONCURRENCY` and follows the endpoint's latency (see
:class:`~sotopia_are.llm.concurrency.AdaptiveLimit`): local servers queue rather than
answer 429, so latency is the signal to slow down.

A stuck server (one that answers nothing at all) is reported once ``retry.max_timeouts``
requests of a call have each waited ``timeout_s`` with the endpoint silent (by default one
request of 120 s), whatever ``retry.max_attempts`` allows for failures that come fast; a
busy server that answers other requests is waited for (see
:mod:`~sotopia_are.llm.watchdog`). The CLI sets ``timeout_s`` from ``--timeout`` /
``SOTOPIA_ARE_TIMEOUT`` and ``retry.max_attempts`` from ``--request-attempts`` /
``SOTOPIA_ARE_REQUEST_ATTEMPTS``.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from sotopia_are.llm.errors import PermanentLLMError
from sotopia_are.llm.http_transport import TransportChoice, choose_transport
from sotopia_are.llm.structured import OutputMode

__all__ = [
    "API_BASE_ENV",
    "API_KEY_ENV",
    "DEFAULT_HOSTED_CONCURRENCY",
    "DEFAULT_INITIAL_CONCURRENCY",
    "DEFAULT_LOCAL_CONCURRENCY",
    "DEFAULT_MAX_REPLY_BYTES",
    "DEFAULT_MAX_WAIT_S",
    "REQUEST_ATTEMPTS_ENV",
    "TIMEOUT_ENV",
    "TRANSPORT_ENV",
    "Endpoint",
    "LLMConfig",
    "RetryPolicy",
    "TransportChoice",
]

API_BASE_ENV = "SOTOPIA_ARE_API_BASE"
API_KEY_ENV = "SOTOPIA_ARE_API_KEY"
TIMEOUT_ENV = "SOTOPIA_ARE_TIMEOUT"
"""The CLI's variable for ``LLMConfig.timeout_s`` (``--timeout``)."""
REQUEST_ATTEMPTS_ENV = "SOTOPIA_ARE_REQUEST_ATTEMPTS"
"""The CLI's variable for ``RetryPolicy.max_attempts`` (``--request-attempts``)."""

TRANSPORT_ENV = "SOTOPIA_ARE_TRANSPORT"
"""The CLI's variable for ``LLMConfig.transport`` (``--transport``)."""

DEFAULT_LOCAL_CONCURRENCY = 128
"""Requests in flight per endpoint and process for a model at an ``api_base`` when
``LLMConfig.max_concurrency`` is unset. A batch runs as many episodes per worker process,
so on two cores 256 requests are in flight: vLLM's default batch (``max_num_seqs``), and
three times what two cores keep busy against a 50 ms server (about 1,400 calls/s x 50
ms). Measured on 1,000 episodes x 20 turns (benchmarks/throughput.py), 256 per worker was
no faster and took 120 MB more at the peak."""

DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024
"""The largest reply body the HTTP transport reads, counted after decompression
(``LLMConfig.max_reply_bytes``): a chat completion is kilobytes, and a small gzip reply
that inflates without bound (a gzip bomb, 1 MB on the wire for 1 GB) must not take the
process's memory."""

DEFAULT_INITIAL_CONCURRENCY = 4
"""Requests in flight per endpoint and process a run starts with: few enough for a local
server with a couple of decoding slots (llama.cpp, Ollama) not to queue the first requests
for minutes; the limit then doubles each round while latency stays flat, so a server that
takes hundreds at once (vLLM) is reached within a few rounds."""

DEFAULT_MAX_WAIT_S = 600.0
"""How long one request may wait for its answer in any case (see ``LLMConfig.max_wait_s``)."""

DEFAULT_HOSTED_CONCURRENCY = 16
"""Requests in flight per endpoint and process at a provider's own endpoint (no
``api_base``) when ``LLMConfig.max_concurrency`` is unset: low enough that a batch's first
burst does not meet a provider's rate limits head on (a 429 lowers it further)."""


class RetryPolicy(BaseModel):
    """Retries of transient failures: up to ``max_attempts`` requests in all.

    Without a ``Retry-After`` from the server, the wait before retry *n* is drawn
    uniformly from ``[0, min(max_backoff_s, initial_backoff_s * 2**n)]`` (exponential
    backoff, full jitter). With one, the wait is what the server asked plus up to
    ``initial_backoff_s`` of jitter; a server asking for more than ``max_retry_after_s``
    fails the call at once with a :class:`~sotopia_are.llm.errors.TransientLLMError`.

    A request that times out (the endpoint answered nothing for ``LLMConfig.timeout_s``
    while it waited, or it waited ``LLMConfig.max_wait_s`` in all) counts toward
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
    the whole process; None (the default) means :data:`DEFAULT_LOCAL_CONCURRENCY` at an
    ``api_base`` and :data:`DEFAULT_HOSTED_CONCURRENCY` at a provider's own endpoint (see
    :meth:`concurrency_for`). Under that ceiling the limit starts at
    ``initial_concurrency`` and adapts to the endpoint: it grows while latency stays flat
    and shrinks when latency grows with load, on a 429, or when a request outlives its
    timeout while the endpoint answers others (see
    :class:`~sotopia_are.llm.concurrency.AdaptiveLimit`).
    ``transport`` is how requests are sent (``auto``, ``http``, ``litellm``; see the
    module). ``output_attempts`` is how many answers a structured call may get
    before :class:`~sotopia_are.llm.errors.GenerationError`. ``params`` are sent with every
    request (``temperature``, ``max_tokens``, ``seed``…).
    ``timeout_s`` is how long a request waits, once sent, before the endpoint is asked
    whether it is busy (then the request keeps waiting and the limit is lowered) or stuck
    (it answered nothing for that long: the request times out; with
    ``retry.max_timeouts`` this bounds how long a stuck server goes unreported). A request
    the endpoint overtook (it answered one sent later) fails once it waited that long, as
    lost, and is retried (see :mod:`~sotopia_are.llm.watchdog`). ``max_wait_s`` bounds one
    request's wait in any case.
    ``max_reply_bytes`` caps a reply's body over the HTTP transport, counted after
    decompression (a larger one is a malformed reply, recorded on the call and retried).
    ``max_tokens`` is sent when neither ``params`` nor the caller (an agent's or judge's own
    budget) gives one, so no request leaves the answer's length to the server.

    Example:
        ```python
        LLMConfig()                                           # SOTOPIA_ARE_* variables
        LLMConfig(api_base="http://localhost:8000/v1", timeout_s=900)  # vLLM on a CPU
        LLMConfig(api_key="sk-...", max_concurrency=8)
        ```
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_base: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    timeout_s: float = Field(default=120.0, gt=0)
    max_wait_s: float = Field(default=DEFAULT_MAX_WAIT_S, gt=0)
    max_concurrency: int | None = Field(default=None, ge=1)
    initial_concurrency: int = Field(default=DEFAULT_INITIAL_CONCURRENCY, ge=1)
    transport: TransportChoice = "auto"
    retry: RetryPolicy = RetryPolicy()
    output_attempts: int = Field(default=3, ge=1)
    output_mode: OutputMode = "auto"
    max_tokens: int = Field(default=1024, ge=1)
    max_reply_bytes: int = Field(default=DEFAULT_MAX_REPLY_BYTES, ge=1)
    params: dict[str, JsonValue] = {}

    def endpoint(
        self, model: str, *, api_base: str | None = None, api_key: str | None = None
    ) -> Endpoint:
        """Where ``model`` is called: explicit arguments, then this config, then the
        ``SOTOPIA_ARE_*`` environment variables, then litellm's provider defaults; and how
        (the transport ``auto`` chooses). A
        :class:`~sotopia_are.llm.errors.PermanentLLMError` for transport ``http`` without an
        ``api_base``, or for a key holding a control character (from whichever source)."""
        base = api_base or self.api_base or os.environ.get(API_BASE_ENV) or None
        key = api_key or self.api_key or os.environ.get(API_KEY_ENV) or None
        if key is not None and not key.isprintable():
            source = "the key given" if api_key or self.api_key else API_KEY_ENV
            raise PermanentLLMError(
                f"the API key of model {model!r} ({source}) holds a control character (a "
                "newline pasted with it?), which no HTTP header may carry: set it again "
                "without one"
            )
        return _endpoint(model, base, key, self.max_reply_bytes, self.transport)

    def concurrency_for(self, endpoint: Endpoint) -> int:
        """The bound on ``endpoint``'s requests in flight in a process: ``max_concurrency``
        if set, else the default for a model at an ``api_base`` or a provider's own
        endpoint."""
        if self.max_concurrency is not None:
            return self.max_concurrency
        if endpoint.api_base is not None:
            return DEFAULT_LOCAL_CONCURRENCY
        return DEFAULT_HOSTED_CONCURRENCY


@functools.lru_cache(maxsize=256)
def _endpoint(
    model: str,
    api_base: str | None,
    api_key: str | None,
    max_reply_bytes: int,
    transport: TransportChoice,
) -> Endpoint:
    """The endpoint of these settings, made once: every model call asks for its endpoint,
    and the settings of a run are few. (An Endpoint is frozen, so one can be shared.)"""
    return Endpoint(
        model=model,
        api_base=api_base,
        api_key=api_key,
        max_reply_bytes=max_reply_bytes,
        transport="http" if choose_transport(model, api_base, transport) == "http" else "litellm",
    )


@dataclass(frozen=True)
class Endpoint:
    """A model at a base URL; ``key`` identifies it for concurrency limits.

    ``api_key`` None means none was given: the provider's variable is read, or at an
    ``api_base`` without one a placeholder is sent (see :mod:`sotopia_are.llm.transport`).
    ``transport``: how its requests are sent (:meth:`LLMConfig.endpoint` resolves
    ``auto``); ``max_reply_bytes``: the HTTP transport's cap on a reply body.
    """

    model: str
    api_base: str | None
    api_key: str | None = field(default=None, repr=False)
    transport: Literal["http", "litellm"] = "litellm"
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES

    @functools.cached_property  # asked for every call; the endpoint is frozen
    def key(self) -> str:
        """``model@api_base`` (``model@default`` for the provider's own endpoint)."""
        return f"{self.model}@{self.api_base or 'default'}"
