"""Which provider failures are worth retrying, and what to tell the user about the rest.

Transient: rate limits (429), timeouts, dropped connections, 5xx — retrying may succeed.
A reply that is not a chat completion (:class:`MalformedReplyError`) counts as transient.
Permanent: missing or bad credentials (401/403), unknown model (404), bad request
(400/422) — they fail at once with a message naming the model and the variable or option
that fixes it; a bad request is a :class:`RequestRejectedError` (that one request, not the
configuration, is at fault).

The HTTP transport's errors (:class:`~sotopia_are.llm.http_transport.HTTPTransportError`)
are classified by their status without importing litellm; litellm's by its types.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping

from sotopia_are.llm._litellm import load_litellm
from sotopia_are.llm.config import API_BASE_ENV, API_KEY_ENV
from sotopia_are.llm.errors import MalformedReplyError, PermanentLLMError, RequestRejectedError
from sotopia_are.llm.http_transport import HTTPTransportError, InvalidURLError, key_variables
from sotopia_are.llm.transport import missing_key_variables

__all__ = [
    "describe",
    "is_provider_error",
    "is_rate_limited",
    "is_transient",
    "permanent_error",
    "retry_after_seconds",
]

_TRANSIENT_STATUS = frozenset({408, 409, 429})

# A key missing on our side never reaches the provider, and litellm maps the client's
# refusal to whatever type it likes: openai's "Missing credentials" comes back as a 500
# InternalServerError, Gemini's and Fireworks' as an APIConnectionError. Only the message
# tells them apart from real server and connection failures.
_MISSING_KEY = re.compile(
    r"missing credentials"
    r"|api_key client option must be set"
    r"|no api[ _-]?key (was )?(provided|found|set)"
    r"|missing [\w ]{0,40}?api[ _-]?key"
    r"|api[ _-]?key (is )?(required|not set|not found|not provided)",
    re.IGNORECASE,
)

_KEY_FIX = f"LLMConfig.api_key, {API_KEY_ENV} or the CLI's --api-key"


def is_transient(exc: BaseException) -> bool:
    """Whether retrying the request that raised ``exc`` may succeed (never for a missing
    or rejected key)."""
    if isinstance(exc, MalformedReplyError):
        return True
    if isinstance(exc, HTTPTransportError):
        return exc.transient
    lt = load_litellm()
    if _is_missing_key(exc) or isinstance(exc, lt.AuthenticationError | lt.PermissionDeniedError):
        return False
    if isinstance(exc, lt.Timeout | lt.APIConnectionError | lt.RateLimitError):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in _TRANSIENT_STATUS or status >= 500)


def is_provider_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an error the transport raised for the provider (vs. a bug of
    ours)."""
    if isinstance(exc, HTTPTransportError):
        return True
    return isinstance(exc, tuple(load_litellm().LITELLM_EXCEPTION_TYPES))


_OVERLOADED = frozenset({429, 503})


def is_rate_limited(exc: BaseException) -> bool:
    """Whether ``exc`` says the server is taking too many requests: a 429, or a 503
    (Ollama's answer when its queue is full, and overloaded proxies')."""
    return getattr(exc, "status_code", None) in _OVERLOADED


def describe(exc: BaseException) -> str:
    """``ErrorType: message`` in one line, for records."""
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}"


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait the server asked for on ``exc`` (``retry-after-ms`` or ``Retry-After``,
    in seconds or as an HTTP date), or None."""
    headers = _headers_of(exc)
    if headers is None:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def permanent_error(exc: BaseException, model: str, api_base: str | None) -> PermanentLLMError:
    """A :class:`PermanentLLMError` for ``exc`` whose message says how to fix it."""
    where = f"at {api_base}" if api_base else "at the provider's default endpoint"
    detail = describe(exc)
    status = getattr(exc, "status_code", None)
    http = isinstance(exc, HTTPTransportError)
    lt = None if http else load_litellm()
    if isinstance(exc, InvalidURLError):
        message = (
            f"model {model!r}: api_base {api_base!r} is not an http(s) URL; give one such as "
            f"http://localhost:8000/v1 (LLMConfig.api_base, {API_BASE_ENV} or --api-base)."
        )
    elif not http and _is_missing_key(exc):
        message = f"model {model!r} {where}: no API key was given; {_key_fix(model, api_base)}."
    elif status in (401, 403) or (
        lt is not None and isinstance(exc, lt.AuthenticationError | lt.PermissionDeniedError)
    ):
        keys = key_variables(model) if http else None
        message = (
            f"model {model!r} {where}: the credentials were rejected; "
            f"{_key_fix(model, api_base, keys)}."
        )
    elif status == 404 or (lt is not None and isinstance(exc, lt.NotFoundError)):
        message = (
            f"model {model!r} was not found {where}; check the model name (litellm form "
            f"'<provider>/<name>', e.g. 'openai/<name>' for an OpenAI-compatible server) "
            f"and api_base (LLMConfig.api_base, or {API_BASE_ENV})."
        )
    elif "LLM Provider NOT provided" in str(exc):
        message = (
            f"litellm does not know which provider serves model {model!r}; prefix it with "
            f"one (e.g. 'openai/{model}' with api_base set to an OpenAI-compatible server, "
            f"'ollama/{model}', 'anthropic/{model}')."
        )
    else:
        return RequestRejectedError(
            f"model {model!r} {where} rejected the request; check the request parameters "
            f"(LLMConfig.params, or params=), LLMConfig.output_mode ('prompt' if the "
            f"server does not support response_format) and the prompt's length against "
            f"the model's context. [{detail}]"
        )
    return PermanentLLMError(f"{message} [{detail}]")


def _is_missing_key(exc: BaseException) -> bool:
    return _MISSING_KEY.search(str(exc)) is not None


def _key_fix(model: str, api_base: str | None, unset: list[str] | None = None) -> str:
    """How to give a key: the provider's unset variables (``unset``, else litellm's
    answer) or ``api_key``."""
    keys = " or ".join(missing_key_variables(model, api_base) if unset is None else unset)
    return f"set {keys} or pass api_key ({_KEY_FIX})" if keys else f"pass api_key ({_KEY_FIX})"


def _headers_of(exc: BaseException) -> Mapping[str, str] | None:
    if isinstance(exc, HTTPTransportError):
        return exc.headers or None
    # litellm copies the provider's response headers onto `litellm_response_headers`;
    # the response object is a fallback for exceptions raised outside its mapping.
    headers = getattr(exc, "litellm_response_headers", None)
    if not headers:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    return headers or None
