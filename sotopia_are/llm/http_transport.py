"""One request to an OpenAI-compatible server over a lean HTTP client.

A model reached through an ``api_base`` (vLLM, SGLang, llama.cpp, Ollama's ``/v1``, any
OpenAI-compatible server) is sent ``POST {api_base}/chat/completions`` directly, with a
keep-alive connection pool per event loop and server, instead of through
``litellm.acompletion``: litellm costs about 3 ms of CPU per call, this path about
0.2 ms, which is what bounds a batch against a fast server (see the README's
"Benchmarks → Throughput"). httpx, litellm's own client, was measured at 0.9 ms per call
with 20 requests in flight and far more with hundreds (its connection pool scans every
connection per request; encode/httpx#3215) and aiohttp at 0.4 ms, so the client here is
this package's own (:mod:`~sotopia_are.llm.http_wire`), with aiohttp for servers behind a
proxy.

The semantics are those of the litellm path (:mod:`sotopia_are.llm.transport`), so a
run's records do not depend on the transport:

* the body is the request's messages and parameters (``max_tokens``, sampling,
  ``response_format``; an ``extra_body`` parameter is merged into the body and
  ``extra_headers`` into the headers, as litellm and the openai SDK do), with the model's
  provider prefix (``openai/``, ``hosted_vllm/``) taken off, as litellm does;
* the key is the endpoint's, else the provider's variable (``OPENAI_API_KEY`` for
  ``openai/``), else :data:`~sotopia_are.llm.transport.PLACEHOLDER_KEY` (a model call reads
  the variable on its event loop's first request to the endpoint, see :class:`Sender`);
* usage is the reply's ``usage`` (None when the server sends none); cost is priced from
  litellm's bundled price table when the model has a price there (``openai/gpt-4o-mini``
  behind a proxy), else None, as litellm would (a local model has no price);
* failures raise the exceptions of this module, named as litellm names them
  (:class:`RateLimitError` for a 429 with its ``Retry-After``, :class:`Timeout`,
  :class:`APIConnectionError`, :class:`InternalServerError`, :class:`AuthenticationError`…),
  which :mod:`sotopia_are.llm.failures` classifies without importing litellm; a 200 that
  is no chat completion is a :class:`~sotopia_are.llm.errors.MalformedReplyError` with the
  same words as the litellm path;
* ``timeout_s`` bounds the whole request (a :class:`Sender`'s caller bounds it instead).

Neither litellm nor this module's pool is imported by ``import sotopia_are``; a process
that only talks to OpenAI-compatible servers never imports litellm (about 200 MB and 3 s
per process).

The parts: which models go this way and under which name and key
(:mod:`~sotopia_are.llm.openai_compatible`), the errors (:mod:`~sotopia_are.llm.http_errors`),
the reply's reading (:mod:`~sotopia_are.llm.http_reply`, priced by
:mod:`~sotopia_are.llm.price_table`) and the connection pools
(:mod:`~sotopia_are.llm.http_pools`); their public names are importable from here too.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson
import pydantic_core
from pydantic import JsonValue

from sotopia_are.llm.errors import MalformedReplyError
from sotopia_are.llm.http_errors import (
    APIConnectionError,
    AuthenticationError,
    BadGatewayError,
    BadRequestError,
    HTTPTransportError,
    InternalServerError,
    InvalidURLError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    Timeout,
    UnprocessableEntityError,
    json_problem,
    malformed,
    status_error,
)
from sotopia_are.llm.http_pools import POOLS, Route, aclose
from sotopia_are.llm.http_reply import completion, read_capped, unencodable
from sotopia_are.llm.http_wire import WirePool
from sotopia_are.llm.openai_compatible import (
    OPENAI_COMPATIBLE_PROVIDERS,
    PLACEHOLDER_KEY,
    TransportChoice,
    api_key_for,
    choose_transport,
    key_variables,
    wire_model,
)
from sotopia_are.llm.request import LLMRequest, LLMResponse

if TYPE_CHECKING:
    import aiohttp

    from sotopia_are.llm.config import Endpoint

__all__ = [
    "OPENAI_COMPATIBLE_PROVIDERS",
    "PLACEHOLDER_KEY",
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
    "Sender",
    "ServiceUnavailableError",
    "Timeout",
    "TransportChoice",
    "UnprocessableEntityError",
    "aclose",
    "choose_transport",
    "json_problem",
    "key_variables",
    "malformed",
    "send",
    "unencodable",
    "wire_model",
]


async def send(request: LLMRequest, endpoint: Endpoint, timeout_s: float) -> LLMResponse:
    """Send ``request`` once to ``endpoint.api_base`` and return the answer with usage and
    cost. Raises this module's :class:`HTTPTransportError` subclasses, or
    :class:`MalformedReplyError` for a 200 that is no chat completion."""
    sender = Sender(endpoint)
    try:
        async with asyncio.timeout(timeout_s):
            return await sender.send(request)
    except TimeoutError as exc:
        raise sender.timed_out(timeout_s) from exc


class Sender:
    """:func:`send` without a timeout of its own, for many requests to one endpoint from
    the running loop: what every request shares is made once (the pool, the headers with
    the key, read from the environment then, and the start of the body). Its caller bounds
    each request's wait and raises :meth:`timed_out` past it (a model call's
    :class:`~sotopia_are.llm.watchdog.Watchdog` does: a timer per request costs more than
    the rest of this module's work on it)."""

    __slots__ = (
        "_contents",
        "_head",
        "_model",
        "_prefix",
        "_route",
        "_tails",
        "endpoint",
        "headers",
    )

    def __init__(self, endpoint: Endpoint) -> None:
        assert endpoint.api_base is not None, "the HTTP transport needs an api_base"
        self.endpoint = endpoint
        self.headers = {
            "Authorization": f"Bearer {api_key_for(endpoint)}",
            "Content-Type": "application/json",
            "Accept-Encoding": "gzip, deflate",  # what the reply is inflated from, with a bound
        }
        self._route: Route | None = None  # found on the first request (an invalid api_base
        # fails that request, as send's does)
        self._head = b""
        self._model = ""
        self._prefix = b""
        self._tails: dict[tuple[object, ...], tuple[object, bytes]] = {}
        self._contents: dict[int, tuple[str, bytes]] = {}

    def timed_out(self, timeout_s: float) -> Timeout:
        """The error of a request that waited ``timeout_s`` without an answer."""
        return _timeout(self.endpoint, timeout_s)

    async def send(self, request: LLMRequest) -> LLMResponse:
        """:func:`send` of ``request``, its wait unbounded here."""
        endpoint = self.endpoint
        route = self._route
        if route is None or route[0].closed:  # a pool closed by aclose(): the loop's new one
            route = self._route = POOLS.route(endpoint.api_base or "")
            if isinstance(route[0], WirePool):
                self._head = route[0].request_head(self.headers)
        pool, url = route
        params = request.params
        headers = self.headers
        if _PLAIN_BODY.isdisjoint(params):
            data = self._body(request)
        else:
            data, headers = _body(request, headers)
        if not isinstance(pool, WirePool):
            raw = await _post_through_proxy(pool, url, data, headers, endpoint)
            return completion(endpoint, request.model, raw)
        head = self._head if headers is self.headers else pool.request_head(headers)
        try:
            status, reason, answer_headers, body = await pool.exchange(
                head, data, endpoint.max_reply_bytes
            )
        except OSError as exc:
            raise _unreachable(endpoint, exc) from exc
        if not 200 <= status < 300:
            raise status_error(endpoint, status, reason, body or b"", answer_headers)
        if body is None:
            raise _over_cap(endpoint)
        return completion(endpoint, request.model, body)

    def _body(self, request: LLMRequest) -> bytes:
        """The JSON :func:`_body` makes, of parts: the model's part is the same for every
        request, and so is the parameters' for the requests of one output type (see
        :meth:`_tail`) and a system message's, when it is the same text (a prompt's system
        message is, for each agent: see :class:`~sotopia_are.llm.templates.PromptLibrary`),
        kept by the text's identity (the text kept with it). pydantic-core's encoder (a
        third of the json module's time for a prompt and schema) writes the same compact
        JSON of each part as of the whole, and orjson the same of a text (see
        :func:`_text_json`)."""
        # The models' fields read from their dicts: a pydantic model's attribute is looked
        # up through its class's __getattr__ hook, several times the cost.
        fields = request.__dict__
        model = fields["model"]
        if model != self._model:
            self._model = model
            self._prefix = b'{"model":%s,"messages":' % pydantic_core.to_json(wire_model(model))
        contents = self._contents
        parts = []
        for message in fields["messages"]:
            said = message.__dict__
            content, role = said["content"], said["role"]
            kept = contents.get(id(content))
            if kept is not None and kept[0] is content and role == "system":
                parts.append(kept[1])  # the system message's whole part
                continue
            part = b'{"role":"%s","content":%s}' % (_ROLES[role], _text_json(content))
            if role == "system":
                if len(contents) >= _KEPT_CONTENTS:
                    contents.clear()
                contents[id(content)] = (content, part)
            parts.append(part)
        return b"%s[%s]%s" % (self._prefix, b",".join(parts), self._tail(fields["params"]))

    def _tail(self, params: Mapping[str, JsonValue]) -> bytes:
        """The end of a body with ``params``: ``,"max_tokens":…,"response_format":…}``
        (``}`` without parameters).

        A structured call's parameters end with its response format, the same object for
        every request of its output type (see
        :func:`~sotopia_are.llm.structured.response_format_for`; never changed once made),
        whose JSON schema is most of the body's parameters: a tail is kept by that object's
        identity (the object kept with it) and the other values, when they are ints,
        strings or floats (each with its type: ``1``, ``1.0`` and ``True`` are equal but
        written apart), a few per sender."""
        if not params:
            return b"}"
        *others, (name, format_) = params.items()
        key: tuple[object, ...] | None = None
        if name == "response_format" and isinstance(format_, dict):
            parts: list[object] = [id(format_)]
            for other, value in others:
                kind = type(value)
                if kind is float:
                    value = value.hex()  # type: ignore[union-attr]  # 0.0 and -0.0 apart
                elif kind is not int and kind is not str:
                    break  # (a bool is equal to an int and written otherwise)
                parts += (other, kind, value)
            else:
                key = tuple(parts)
                found = self._tails.get(key)
                if found is not None and found[0] is format_:
                    return found[1]
        tail = b",%s" % pydantic_core.to_json(params)[1:]
        if key is not None:
            if len(self._tails) >= _KEPT_TAILS:
                self._tails.clear()
            self._tails[key] = (format_, tail)
        return tail


def _text_json(text: str) -> bytes:
    """``pydantic_core.to_json(text)``, the same bytes, written by orjson: a prompt's text
    is most of a body, and orjson escapes it about six times faster (2.3 instructions a
    character against 13.6). Both write JSON's minimal escapes (``\\"``, ``\\\\``, the
    short ones and ``\\u00XX`` for the other control characters) and every other
    character as its UTF-8 (a law in ``tests/llm/test_llm_request_bodies.py``); a text
    orjson refuses (a lone surrogate) gets pydantic-core's own error."""
    try:
        return orjson.dumps(text)
    except TypeError:
        return pydantic_core.to_json(text)


_ROLES = {"system": b"system", "user": b"user", "assistant": b"assistant"}
"""A message's role as its JSON string holds it (no character to escape)."""

_KEPT_CONTENTS = 256
"""System messages' JSON (the whole message's) a sender keeps (see :meth:`Sender._body`):
one per agent name."""

_KEPT_TAILS = 64
"""Parameters' tails a sender keeps (see :meth:`Sender._tail`): a batch's output types are
one per agent name and set of actions, a few at a time per worker."""


_PLAIN_BODY = frozenset({"extra_body", "extra_headers", "model", "messages"})
"""Parameters that change more than the body's tail (see :func:`_body`)."""


def _body(request: LLMRequest, headers: dict[str, str]) -> tuple[bytes, dict[str, str]]:
    """The body of ``request`` and the headers it is sent with: its messages and
    parameters, ``extra_body`` merged into the body and ``extra_headers`` into
    ``headers``."""
    params = request.params
    body: dict[str, Any] = {
        "model": wire_model(request.model),
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
    }
    if "extra_body" in params or "extra_headers" in params:
        params = dict(params)
        extra_body = params.pop("extra_body", None)
        extra_headers = params.pop("extra_headers", None)
        body.update(params)
        if isinstance(extra_body, dict):
            body.update(extra_body)
        if isinstance(extra_headers, dict):
            headers = {**headers, **{str(k): str(v) for k, v in extra_headers.items()}}
    else:
        body.update(params)
    return pydantic_core.to_json(body), headers


async def _post_through_proxy(
    session: aiohttp.ClientSession,
    url: str,
    data: bytes,
    headers: dict[str, str],
    endpoint: Endpoint,
) -> bytes:
    """The body of a 2xx answer to ``data``, through aiohttp (which speaks to proxies); the
    errors of this module otherwise. Its wait is bounded by the caller."""
    import aiohttp

    try:
        async with session.post(url, data=data, headers=headers, timeout=_no_timeout()) as response:
            status = response.status
            raw = await read_capped(response, endpoint.max_reply_bytes)
            if not 200 <= status < 300:
                raise status_error(endpoint, status, response.reason, raw or b"", response.headers)
            if raw is None:
                raise _over_cap(endpoint)
            return raw
    except HTTPTransportError:
        raise
    except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as exc:
        raise InvalidURLError(f"api_base {endpoint.api_base!r} is not an http(s) URL") from exc
    except (aiohttp.ClientError, OSError) as exc:
        raise _unreachable(endpoint, exc) from exc


def _timeout(endpoint: Endpoint, timeout_s: float) -> Timeout:
    return Timeout(f"the server at {endpoint.api_base} gave no answer within {timeout_s:g} s")


def _unreachable(endpoint: Endpoint, exc: BaseException) -> APIConnectionError:
    return APIConnectionError(
        f"the server at {endpoint.api_base} could not be reached or dropped the "
        f"connection: {type(exc).__name__}: {exc or 'no detail'}"
    )


def _over_cap(endpoint: Endpoint) -> MalformedReplyError:
    return malformed(
        endpoint,
        f"a body over {endpoint.max_reply_bytes:,} bytes once decompressed (the "
        "reply-size cap, LLMConfig.max_reply_bytes; a compressed reply that "
        "inflates without bound is cut off there)",
    )


@functools.cache
def _no_timeout() -> aiohttp.ClientTimeout:
    """No timeout of aiohttp's own (its session's default is 5 minutes): the caller's
    bounds the request."""
    import aiohttp

    return aiohttp.ClientTimeout()
