"""The typed errors of the LLM layer.

Every error a caller can see from :mod:`sotopia_are.llm` derives from :class:`LLMError`.
Errors raised by a call carry that call's :class:`~sotopia_are.llm.accounting.LLMCall`
record in ``.call`` (set when the record exists), so a failure is never unaccounted for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sotopia_are import SotopiaAreError

if TYPE_CHECKING:
    from sotopia_are.llm.accounting import Attempt, LLMCall

__all__ = [
    "ConfigurationError",
    "GenerationError",
    "LLMError",
    "MalformedReplyError",
    "PermanentLLMError",
    "ReplayMissError",
    "RequestRejectedError",
    "TemplateError",
    "TransientLLMError",
]


class LLMError(SotopiaAreError):
    """Base class of the LLM layer's errors; ``call`` is the failed call's record, if any."""

    call: LLMCall | None = None


class TemplateError(LLMError):
    """A prompt template is missing, malformed, or needs a variable that was not given."""


class PermanentLLMError(LLMError):
    """The request failed for a reason retrying cannot fix; it was not retried.

    A missing or rejected key, an unknown model, a bad request: the message names the model
    and the environment variable or option that fixes it.
    """


class ConfigurationError(PermanentLLMError):
    """A model cannot be called as configured, found before any episode is created (see
    :mod:`sotopia_are.llm.preflight`): an unknown provider, a missing or rejected key, an
    unreachable endpoint, a model the server does not serve. The message names the fix."""


class RequestRejectedError(PermanentLLMError):
    """The server refused this one request (a 400/422, e.g. a prompt longer than the
    model's context), not the key or the model: other requests to the same model may
    well succeed, so it is the failure of one call (one episode), not of a configuration.
    """


class TransientLLMError(LLMError):
    """Transient failures (rate limits, timeouts, 5xx, dropped connections) outlasted
    every retry the :class:`~sotopia_are.llm.retry.RetryPolicy` allows."""


class MalformedReplyError(TransientLLMError):
    """A server answered 200 with something that is not a chat completion: no choices,
    a choice without a message, a body that is not JSON or is cut off. The message names
    the server, the model and which of these it was. Retried like a 5xx (a server that
    garbles one reply usually answers the next), then raised as it is."""


class GenerationError(LLMError):
    """The model never produced output that validates, after every allowed attempt.

    ``attempts`` holds each attempt's raw output and the validation error it got.
    """

    def __init__(self, message: str, attempts: list[Attempt]) -> None:
        super().__init__(message)
        self.attempts = attempts


class ReplayMissError(LLMError):
    """In replay mode, a request arrived that the recording does not contain (or whose
    recorded answers were all used up)."""
