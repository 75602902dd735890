"""One request to a model: over the lean HTTP client to an OpenAI-compatible ``api_base``
(:mod:`sotopia_are.llm.http_transport`, when the endpoint's transport is ``http``), else
through litellm, with litellm's own retries switched off.

Retries happen in :mod:`sotopia_are.llm.retry` instead, so that every request that
reaches the provider is one recorded attempt and the accounting is exact.

A keyless server at an ``api_base`` (vLLM, Ollama, llama.cpp) is sent a placeholder key
when no key is given from any source: such servers ignore it, but litellm's OpenAI
client refuses to send a request without one. A provider's default endpoint (no
``api_base``) never gets the placeholder, so a missing key there fails at once.

A 200 that is not a chat completion becomes a :class:`MalformedReplyError` saying what
was wrong with it; litellm would report it as an ``IndexError`` (no choices) or as a
"500" with a parser traceback in its message (no message, not JSON, cut off, not UTF-8).
A reply whose text is not valid Unicode (a lone surrogate) is malformed too, on either
transport, so it is asked for again rather than failing the episode when it is stored.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from sotopia_are.llm import http_transport
from sotopia_are.llm._litellm import load_litellm
from sotopia_are.llm.config import Endpoint
from sotopia_are.llm.errors import MalformedReplyError
from sotopia_are.llm.http_transport import PLACEHOLDER_KEY, json_problem, malformed, unencodable
from sotopia_are.llm.request import LLMRequest, LLMResponse

__all__ = ["PLACEHOLDER_KEY", "Sender", "missing_key_variables", "send"]


async def send(request: LLMRequest, endpoint: Endpoint, timeout_s: float) -> LLMResponse:
    """Send ``request`` once to ``endpoint`` and return the answer with usage and cost.

    Over HTTP (``endpoint.transport == "http"``) it raises the exceptions of
    :mod:`~sotopia_are.llm.http_transport`; through litellm, litellm's exceptions
    unchanged. A reply that is not a chat completion is a :class:`MalformedReplyError`
    either way.
    """
    if endpoint.transport == "http":
        return await http_transport.send(request, endpoint, timeout_s)
    return await _send_litellm(request, endpoint, timeout_s)


class Sender:
    """:func:`send` for many requests to one endpoint from the running loop, with what
    they share made once (see :class:`~sotopia_are.llm.http_transport.Sender`).

    :attr:`send` sends one request. Through litellm each request is bounded by
    ``timeout_s``, as by :func:`send`; over HTTP it is not (:attr:`bounded` is False):
    the caller bounds each request's wait to ``timeout_s`` and raises :meth:`timed_out`
    past it, the error :func:`send` raises."""

    __slots__ = ("_http", "bounded", "endpoint", "send", "timeout_s")

    def __init__(self, endpoint: Endpoint, timeout_s: float) -> None:
        self.endpoint, self.timeout_s = endpoint, timeout_s
        self._http = http_transport.Sender(endpoint) if endpoint.transport == "http" else None
        self.bounded = self._http is None
        # The HTTP sender's own method, called without a layer of this class's between.
        self.send: Callable[[LLMRequest], Awaitable[LLMResponse]] = (
            self._send_litellm if self._http is None else self._http.send
        )

    def timed_out(self) -> Exception:
        """The error of a request over HTTP that waited ``timeout_s`` without an answer."""
        assert self._http is not None, "litellm bounds its own requests"
        return self._http.timed_out(self.timeout_s)

    async def _send_litellm(self, request: LLMRequest) -> LLMResponse:
        return await _send_litellm(request, self.endpoint, self.timeout_s)


async def _send_litellm(request: LLMRequest, endpoint: Endpoint, timeout_s: float) -> LLMResponse:
    """:func:`send` through ``litellm.acompletion``."""
    litellm = load_litellm()
    kwargs: dict[str, Any] = dict(request.params)
    if endpoint.api_base is not None:
        kwargs["api_base"] = endpoint.api_base
    key = _key_to_send(endpoint)
    if key is not None:
        kwargs["api_key"] = key
    try:
        response = await litellm.acompletion(
            model=request.model,
            messages=[m.model_dump() for m in request.messages],
            timeout=timeout_s,
            num_retries=0,  # litellm's retry wrapper
            max_retries=0,  # the provider SDK's (openai's) own retries
            **kwargs,
        )
    except Exception as exc:
        problem = _unreadable_reply(exc)
        if problem is None:
            raise
        raise _malformed(endpoint, problem) from exc
    choices = getattr(response, "choices", None)
    if not choices:
        raise _malformed(endpoint, "a reply with no choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise _malformed(endpoint, "a reply whose first choice has no message")
    usage = getattr(response, "usage", None)
    problem = unencodable(message.content or "")
    if problem is not None:
        raise _malformed(endpoint, problem)
    return LLMResponse(
        text=message.content or "",
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        cost_usd=_cost(litellm, response),
    )


def _malformed(endpoint: Endpoint, problem: str) -> MalformedReplyError:
    return malformed(endpoint, problem)


def _unreadable_reply(exc: BaseException) -> str | None:
    """What was wrong with a 200 reply that litellm failed to read while raising
    ``exc`` (seen through its chain of causes); None for any other failure, such as a
    real HTTP error status, which litellm reports as the same exception types."""
    seen: BaseException | None = exc
    for _ in range(8):  # the chains seen are 3-4 long; a bound guards against cycles
        if seen is None:
            return None
        if type(seen).__name__ in ("HTTPStatusError", "APIStatusError"):
            return None  # the server sent an error status: not a malformed 200
        if isinstance(seen, json.JSONDecodeError):
            return json_problem(seen)
        if isinstance(seen, UnicodeDecodeError) or "codec can't decode" in str(seen):
            return "a body that is not UTF-8 text"
        text = str(seen)
        if "Invalid response object" in text:
            return "a reply whose first choice has no message"
        if "Empty or invalid response from LLM endpoint" in text:
            return "a JSON body of another shape"
        seen = seen.__cause__ or seen.__context__
    return None


def missing_key_variables(model: str, api_base: str | None = None) -> list[str]:
    """The environment variables holding ``model``'s provider key that litellm finds
    unset (empty when the provider needs no key, has one, or litellm cannot tell)."""
    try:
        report = load_litellm().validate_environment(model=model, api_base=api_base)
    except Exception:  # litellm cannot tell for this model: report nothing rather than guess
        return []
    # litellm also lists other settings it misses (AZURE_API_VERSION…); only keys matter here.
    return [str(name) for name in report.get("missing_keys", []) if "KEY" in str(name)]


def _key_to_send(endpoint: Endpoint) -> str | None:
    """The endpoint's key; else, at an ``api_base`` whose provider key variable is unset
    too, :data:`PLACEHOLDER_KEY`; else None (litellm reads the provider's variable)."""
    if endpoint.api_key is not None or endpoint.api_base is None:
        return endpoint.api_key
    return PLACEHOLDER_KEY if missing_key_variables(endpoint.model, endpoint.api_base) else None


def _cost(litellm: Any, response: Any) -> float | None:
    """The USD cost of ``response``, or None when litellm has no price for the model."""
    hidden = getattr(response, "_hidden_params", None) or {}
    if "response_cost" in hidden:
        # litellm already priced the response while logging it; pricing it again costs
        # about a millisecond per call.
        cost = hidden["response_cost"]
        return None if cost is None else float(cost)
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # litellm raises plain Exception for unpriced models: cost unknown
        return None
