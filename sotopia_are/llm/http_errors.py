"""The HTTP transport's errors: one class per kind of failure, named as litellm names them.

:mod:`sotopia_are.llm.failures` classifies them without importing litellm: ``transient``
says whether retrying may succeed, ``status_code`` and ``headers`` what the server
answered (a 429's ``Retry-After``). A 200 that is no chat completion is a
:class:`~sotopia_are.llm.errors.MalformedReplyError` (:func:`malformed`), with the same
words on both transports.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from sotopia_are import SotopiaAreError
from sotopia_are.llm.errors import MalformedReplyError

if TYPE_CHECKING:
    from sotopia_are.llm.config import Endpoint

__all__ = [
    "APIConnectionError",
    "AuthenticationError",
    "BadGatewayError",
    "BadRequestError",
    "HTTPTransportError",
    "InternalServerError",
    "InvalidURLError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "ServiceUnavailableError",
    "Timeout",
    "UnprocessableEntityError",
    "json_problem",
    "malformed",
    "status_error",
]


class HTTPTransportError(SotopiaAreError):
    """A request over the HTTP transport failed. ``status_code`` is the HTTP status (None
    when no answer came), ``headers`` the answer's headers (``Retry-After``…);
    ``transient``: whether retrying may succeed."""

    transient: ClassVar[bool] = False

    def __init__(
        self, message: str, status_code: int | None = None, headers: Mapping[str, str] = {}
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.headers = dict(headers)


class APIConnectionError(HTTPTransportError):
    """The server could not be reached, or dropped the connection before answering."""

    transient = True


class Timeout(HTTPTransportError):
    """No answer within the timeout (or the server answered 408 or 504). ``stuck``: the
    watchdog found the endpoint answering nothing at all (no other request, no probe) for
    longer than the request's timeout (:mod:`~sotopia_are.llm.watchdog`), unlike a request
    that outlived ``LLMConfig.max_wait_s`` on a busy server."""

    transient = True
    stuck = False


class InvalidURLError(HTTPTransportError):
    """The ``api_base`` is not an http(s) URL."""


class BadRequestError(HTTPTransportError):
    """400 (or another 4xx the server used to refuse the request)."""


class AuthenticationError(HTTPTransportError):
    """401: the key was refused."""


class PermissionDeniedError(HTTPTransportError):
    """403: the key may not use this model or server."""


class NotFoundError(HTTPTransportError):
    """404: no such model, or no chat completions at this ``api_base``."""


class UnprocessableEntityError(BadRequestError):
    """422: the server could not process the request's parameters."""


class RateLimitError(HTTPTransportError):
    """429: too many requests; ``headers`` may say how long to wait."""

    transient = True


class InternalServerError(HTTPTransportError):
    """500, or another 5xx without a class of its own."""

    transient = True


class BadGatewayError(InternalServerError):
    """502."""


class ServiceUnavailableError(InternalServerError):
    """503: the server is overloaded or starting."""


class _ConflictError(HTTPTransportError):
    """409 (retried, as litellm's mapping does)."""

    transient = True


_BY_STATUS: dict[int, type[HTTPTransportError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    408: Timeout,
    409: _ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
    500: InternalServerError,
    502: BadGatewayError,
    503: ServiceUnavailableError,
    504: Timeout,
}


def status_error(
    endpoint: Endpoint, status: int, reason: str | None, body: bytes, headers: Mapping[str, str]
) -> HTTPTransportError:
    kind = _BY_STATUS.get(status)
    if kind is None:
        kind = InternalServerError if status >= 500 else BadRequestError
    said = f"HTTP {status}{f' {reason}' if reason else ''}"
    return kind(
        f"the server at {endpoint.api_base} answered {said}: {_error_message(body)}",
        status,
        headers,
    )


def _error_message(body: bytes) -> str:
    """What an error body says: OpenAI's ``error.message``, vLLM's ``message``,
    FastAPI's ``detail``, or the text itself (cut at 500 characters)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        for key in ("message", "detail"):
            if isinstance(data.get(key), str):
                return str(data[key])
    if not text:
        return "(no body)"
    return text[:500] + ("…" if len(text) > 500 else "")


def malformed(endpoint: Endpoint, problem: str) -> MalformedReplyError:
    """The error for a 200 from ``endpoint`` that is no chat completion (``problem``)."""
    where = f"the server at {endpoint.api_base}" if endpoint.api_base else "the provider"
    return MalformedReplyError(
        f"{where} answered model {endpoint.model!r} with {problem}, not a chat completion; "
        "check that api_base points at an OpenAI-compatible /chat/completions endpoint "
        "and that no proxy in between rewrites or cuts its replies"
    )


def json_problem(error: json.JSONDecodeError) -> str:
    """What is wrong with a body that failed to parse as JSON with ``error``."""
    body = error.doc.strip()
    if not body:
        return "an empty body"
    preview = body[:60] + ("…" if len(body) > 60 else "")
    ends_inside = error.msg.startswith("Unterminated") or error.pos >= len(error.doc.rstrip())
    if body[0] in "{[" and ends_inside:
        return f"a truncated JSON body (it stops mid-document: {error.msg}; {preview!r})"
    return f"a body that is not JSON ({error.msg}: {preview!r})"
