"""The LLM layer: the only place in sotopia_are that talks to models (and to litellm).

Call a model with :meth:`LLMSession.generate` (or :func:`generate`): a Jinja2 prompt
template from ``prompts/`` is rendered into chat messages, sent (over a lean HTTP client
to an OpenAI-compatible ``api_base``, through litellm to a named provider; see
``LLMConfig.transport``) with bounded, adaptive per-endpoint concurrency and retries of
transient failures, optionally parsed into
a pydantic model (after the output type's own normalisation of form, re-asking with the
validation error when it does not validate), and recorded as an :class:`LLMCall`.
:func:`preflight` checks that models can be called as configured before a study starts.
Importing this package does not import litellm.
"""

from sotopia_are.llm.accounting import Attempt, LLMCall, Usage
from sotopia_are.llm.cache import ResponseCache
from sotopia_are.llm.concurrency import CONCURRENCY, AdaptiveLimit, ConcurrencyRegistry, InFlight
from sotopia_are.llm.config import (
    API_BASE_ENV,
    API_KEY_ENV,
    DEFAULT_HOSTED_CONCURRENCY,
    DEFAULT_INITIAL_CONCURRENCY,
    DEFAULT_LOCAL_CONCURRENCY,
    DEFAULT_MAX_WAIT_S,
    REQUEST_ATTEMPTS_ENV,
    TIMEOUT_ENV,
    TRANSPORT_ENV,
    Endpoint,
    LLMConfig,
    RetryPolicy,
    TransportChoice,
)
from sotopia_are.llm.errors import (
    ConfigurationError,
    GenerationError,
    LLMError,
    MalformedReplyError,
    PermanentLLMError,
    ReplayMissError,
    RequestRejectedError,
    TemplateError,
    TransientLLMError,
)
from sotopia_are.llm.preflight import PREFLIGHT_TIMEOUT_S, ModelUse, apreflight, preflight
from sotopia_are.llm.replay import RecordedExchange, Recorder, Replayer
from sotopia_are.llm.request import LLMRequest, LLMResponse, Message
from sotopia_are.llm.sampling import (
    AGENT_SAMPLING_ENV,
    DEFAULT_JUDGE_SAMPLING,
    EXTRA_PREFIX,
    JUDGE_SAMPLING_ENV,
    KNOWN_SETTINGS,
    RESERVED_PARAMS,
    Sampling,
    request_seed,
)
from sotopia_are.llm.session import Generation, LLMSession, generate
from sotopia_are.llm.structured import (
    CHARS_PER_TOKEN,
    FORM_TOKENS,
    OUTPUT_MODES,
    NormalizesReplies,
    OutputMode,
    OutputModeMemory,
    ParsedReply,
    extract_json,
    parse_reply,
    resolve_output_mode,
    text_max_chars,
)
from sotopia_are.llm.templates import PromptLibrary, packaged_prompts_dir

__all__ = [
    "AGENT_SAMPLING_ENV",
    "API_BASE_ENV",
    "API_KEY_ENV",
    "CHARS_PER_TOKEN",
    "CONCURRENCY",
    "DEFAULT_HOSTED_CONCURRENCY",
    "DEFAULT_INITIAL_CONCURRENCY",
    "DEFAULT_JUDGE_SAMPLING",
    "DEFAULT_LOCAL_CONCURRENCY",
    "DEFAULT_MAX_WAIT_S",
    "EXTRA_PREFIX",
    "FORM_TOKENS",
    "JUDGE_SAMPLING_ENV",
    "KNOWN_SETTINGS",
    "OUTPUT_MODES",
    "PREFLIGHT_TIMEOUT_S",
    "REQUEST_ATTEMPTS_ENV",
    "RESERVED_PARAMS",
    "TIMEOUT_ENV",
    "TRANSPORT_ENV",
    "AdaptiveLimit",
    "Attempt",
    "ConcurrencyRegistry",
    "ConfigurationError",
    "Endpoint",
    "Generation",
    "GenerationError",
    "InFlight",
    "LLMCall",
    "LLMConfig",
    "LLMError",
    "LLMRequest",
    "LLMResponse",
    "LLMSession",
    "MalformedReplyError",
    "Message",
    "ModelUse",
    "NormalizesReplies",
    "OutputMode",
    "OutputModeMemory",
    "ParsedReply",
    "PermanentLLMError",
    "PromptLibrary",
    "RecordedExchange",
    "Recorder",
    "ReplayMissError",
    "Replayer",
    "RequestRejectedError",
    "ResponseCache",
    "RetryPolicy",
    "Sampling",
    "TemplateError",
    "TransientLLMError",
    "TransportChoice",
    "Usage",
    "apreflight",
    "extract_json",
    "generate",
    "packaged_prompts_dir",
    "parse_reply",
    "preflight",
    "request_seed",
    "resolve_output_mode",
    "text_max_chars",
]
