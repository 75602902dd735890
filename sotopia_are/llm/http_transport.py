"""One request to an OpenAI-compatible server over a lean HTTP client (aiohttp).

A model reached through an ``api_base`` (vLLM, SGLang, llama.cpp, Ollama's ``/v1``, any
OpenAI-compatible server) is sent ``POST {api_base}/chat/completions`` directly, with a
keep-alive connection pool per event loop and server, instead of through
``litellm.acompletion``: litellm costs about 3 ms of CPU per call, this path about
0.2 ms, which is what bounds a batch against a fast server (see the README's
"Benchmarks → Throughput"). httpx, litellm's own client, was measured at 0.9 ms per call
with 20 requests in flight and far more with hundreds (its connection pool scans every
connection per request; encode/httpx#3215), so the client here is aiohttp.

The semantics are those of the litellm path (:mod:`sotopia_are.llm.transport`), so a
run's records do not depend on the transport:

* the body is the request's messages and parameters (``max_tokens``, sampling,
  ``response_format``; an ``extra_body`` parameter is merged into the body and
  ``extra_headers`` into the headers, as litellm and the openai SDK do), with the model's
  provider prefix (``openai/``, ``hosted_vllm/``) taken off, as litellm does;
* the key is the endpoint's, else the provider's variable (``OPENAI_API_KEY`` for
  ``openai/``), else :data:`~sotopia_are.llm.transport.PLACEHOLDER_KEY`;
* usage is the reply's ``usage`` (None when the server sends none); cost is priced from
  litellm's bundled price table when the model has a price there (``openai/gpt-4o-mini``
  behind a proxy), else None, as litellm would (a local model has no price);
* failures raise the exceptions of this module, named as litellm names them
  (:class:`RateLimitError` for a 429 with its ``Retry-After``, :class:`Timeout`,
  :class:`APIConnectionError`, :class:`InternalServerError`, :class:`AuthenticationError`…),
  which :mod:`sotopia_are.llm.failures` classifies without importing litellm; a 200 that
  is no chat completion is a :class:`~sotopia_are.llm.errors.MalformedReplyError` with the
  same words as the litellm path;
* ``timeout_s`` bounds the whole request.

Neither litellm nor this module's pool is imported by ``import sotopia_are``; a process
that only talks to OpenAI-compatible servers never imports litellm (about 200 MB and 3 s
per process).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import json
import os
import threading
import weakref
import zlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from sotopia_are import SotopiaAreError
from sotopia_are.llm.errors import MalformedReplyError, PermanentLLMError
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
    "wire_model",
]

TransportChoice = Literal["auto", "http", "litellm"]
"""How requests are sent: ``http`` (this module, to an OpenAI-compatible ``api_base``),
``litellm``, or ``auto``: ``http`` for an ``openai/`` or ``hosted_vllm/`` model at an
``api_base``, litellm for everything else (every named provider's own endpoint)."""

PLACEHOLDER_KEY = "sk-no-key-needed"
"""The key sent to an ``api_base`` when no key is given from any source: keyless servers
(vLLM, Ollama, llama.cpp) ignore it."""

OPENAI_COMPATIBLE_PROVIDERS: Mapping[str, str] = {
    "openai": "OPENAI_API_KEY",
    "hosted_vllm": "HOSTED_VLLM_API_KEY",
}
"""The litellm provider prefixes that name an OpenAI-compatible server, with the variable
holding each one's key: ``auto`` sends these to an ``api_base`` over HTTP."""


def choose_transport(model: str, api_base: str | None, choice: TransportChoice) -> str:
    """``"http"`` or ``"litellm"`` for ``model`` at ``api_base`` under ``choice``.

    ``http`` without an ``api_base`` is a :class:`PermanentLLMError`: this transport
    speaks to an OpenAI-compatible server, and a named provider's own endpoint is
    litellm's."""
    if choice == "litellm":
        return "litellm"
    if api_base is None:
        if choice == "http":
            raise PermanentLLMError(
                f"transport 'http' sends requests to an OpenAI-compatible api_base, and model "
                f"{model!r} has none: give one (LLMConfig.api_base, SOTOPIA_ARE_API_BASE or the "
                "CLI's --api-base), or use transport 'auto' or 'litellm' for a provider's own "
                "endpoint"
            )
        return "litellm"
    if choice == "http":
        return "http"
    return "http" if _provider(model) in OPENAI_COMPATIBLE_PROVIDERS else "litellm"


def _provider(model: str) -> str | None:
    prefix, slash, _name = model.partition("/")
    return prefix if slash else None


def wire_model(model: str) -> str:
    """The model name the server is sent: without an OpenAI-compatible provider prefix
    (``openai/Qwen/Qwen2.5-7B`` → ``Qwen/Qwen2.5-7B``), as litellm sends it."""
    prefix, slash, name = model.partition("/")
    return name if slash and prefix in OPENAI_COMPATIBLE_PROVIDERS else model


def key_variables(model: str) -> list[str]:
    """The variable holding ``model``'s provider key, when it is unset (empty when the
    provider has none or it is set)."""
    variable = OPENAI_COMPATIBLE_PROVIDERS.get(_provider(model) or "")
    return [variable] if variable is not None and not os.environ.get(variable) else []


def _key(endpoint: Endpoint) -> str:
    if endpoint.api_key is not None:
        return endpoint.api_key
    variable = OPENAI_COMPATIBLE_PROVIDERS.get(_provider(endpoint.model) or "")
    return (os.environ.get(variable) if variable else None) or PLACEHOLDER_KEY


# -- errors -------------------------------------------------------------------------------


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
    """No answer within the timeout (or the server answered 408 or 504)."""

    transient = True


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


def _status_error(
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


# -- sending ------------------------------------------------------------------------------


async def send(request: LLMRequest, endpoint: Endpoint, timeout_s: float) -> LLMResponse:
    """Send ``request`` once to ``endpoint.api_base`` and return the answer with usage and
    cost. Raises this module's :class:`HTTPTransportError` subclasses, or
    :class:`MalformedReplyError` for a 200 that is no chat completion."""
    import aiohttp

    assert endpoint.api_base is not None, "the HTTP transport needs an api_base"
    session, url = _POOLS.session(endpoint.api_base)
    params = request.params
    body: dict[str, Any] = {
        "model": wire_model(request.model),
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
    }
    headers = {
        "Authorization": f"Bearer {_key(endpoint)}",
        "Content-Type": "application/json",
        "Accept-Encoding": "gzip, deflate",  # what _read_capped inflates
    }
    if "extra_body" in params or "extra_headers" in params:
        params = dict(params)
        extra_body = params.pop("extra_body", None)
        extra_headers = params.pop("extra_headers", None)
        body.update(params)
        if isinstance(extra_body, dict):
            body.update(extra_body)
        if isinstance(extra_headers, dict):
            headers.update({str(k): str(v) for k, v in extra_headers.items()})
    else:
        body.update(params)
    data = json.dumps(body, ensure_ascii=False).encode()
    try:
        async with session.post(
            url, data=data, headers=headers, timeout=_client_timeout(timeout_s)
        ) as response:
            status = response.status
            raw = await _read_capped(response, endpoint.max_reply_bytes)
            if not 200 <= status < 300:
                raise _status_error(endpoint, status, response.reason, raw or b"", response.headers)
            if raw is None:
                raise malformed(
                    endpoint,
                    f"a body over {endpoint.max_reply_bytes:,} bytes once decompressed (the "
                    "reply-size cap, LLMConfig.max_reply_bytes; a compressed reply that "
                    "inflates without bound is cut off there)",
                )
    except HTTPTransportError:
        raise
    except TimeoutError as exc:
        raise Timeout(
            f"the server at {endpoint.api_base} gave no answer within {timeout_s:g} s"
        ) from exc
    except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as exc:
        raise InvalidURLError(f"api_base {endpoint.api_base!r} is not an http(s) URL") from exc
    except (aiohttp.ClientError, OSError) as exc:
        raise APIConnectionError(
            f"the server at {endpoint.api_base} could not be reached or dropped the "
            f"connection: {type(exc).__name__}: {exc or 'no detail'}"
        ) from exc
    return _completion(endpoint, request.model, raw)


async def _read_capped(response: aiohttp.ClientResponse, cap: int) -> bytes | None:
    """The decompressed body of ``response``, or None once it grows past ``cap`` bytes.

    The session leaves bodies compressed (``auto_decompress=False``) and they are inflated
    here at most :data:`_READ_CHUNK` bytes at a time: aiohttp would inflate each network
    chunk whole, and 64 KB of a gzip bomb is 64 MB of text, so a small compressed reply
    is cut off at the cap instead of being held whole."""
    decoder = _decoder(response.headers.get("Content-Encoding", ""))
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_READ_CHUNK):
        pending = chunk
        while pending:
            if decoder is None:
                piece, pending = pending, b""
            else:
                piece = decoder.decompress(pending, _READ_CHUNK)
                pending = decoder.unconsumed_tail
            size += len(piece)
            if size > cap:
                return None
            parts.append(piece)
    return b"".join(parts)


def _decoder(encoding: str) -> Any:
    """An incremental inflater for a ``Content-Encoding`` of gzip or deflate (None for a
    body sent as it is)."""
    if encoding.strip().lower() in ("gzip", "x-gzip", "deflate"):
        return zlib.decompressobj(32 + zlib.MAX_WBITS)  # a gzip or a zlib header
    return None


_READ_CHUNK = 1 << 16


def _completion(endpoint: Endpoint, model: str, raw: bytes) -> LLMResponse:
    """The answer in a 200's body ``raw``, or :class:`MalformedReplyError`."""
    try:
        reply = json.loads(raw)
    except UnicodeDecodeError:
        raise malformed(endpoint, "a body that is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise malformed(endpoint, json_problem(error)) from None
    except RecursionError:
        raise malformed(endpoint, "a JSON body nested too deep to read") from None
    if not isinstance(reply, dict):
        raise malformed(endpoint, "a JSON body of another shape")
    choices = reply.get("choices")
    if not choices or not isinstance(choices, list):
        raise malformed(endpoint, "a reply with no choices")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise malformed(endpoint, "a reply whose first choice has no message")
    content = message.get("content")
    usage = reply.get("usage")
    prompt_tokens = completion_tokens = None
    if isinstance(usage, dict):
        prompt_tokens = _count(usage.get("prompt_tokens"))
        completion_tokens = _count(usage.get("completion_tokens"))
    return LLMResponse(
        text=content if isinstance(content, str) else "" if content is None else str(content),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=_cost(model, prompt_tokens, completion_tokens),
        service_s=_service_seconds(reply.get("timings")),
    )


def _service_seconds(timings: Any) -> float | None:
    """The seconds the server spent on the answer, from llama.cpp's ``timings`` (prompt
    processing plus generation); None when the reply has none."""
    if not isinstance(timings, dict):
        return None
    spent = [timings.get("prompt_ms"), timings.get("predicted_ms")]
    if not all(isinstance(ms, int | float) and not isinstance(ms, bool) for ms in spent):
        return None
    total = float(spent[0]) + float(spent[1])  # type: ignore[arg-type]
    return total / 1000.0 if total > 0 else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@functools.lru_cache(maxsize=64)
def _client_timeout(timeout_s: float) -> aiohttp.ClientTimeout:
    import aiohttp

    return aiohttp.ClientTimeout(total=timeout_s)


# -- cost ---------------------------------------------------------------------------------


def _cost(model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
    """The USD cost of an answer, from litellm's bundled price table; None when the model
    has no price there (a local model) or the server sent no usage."""
    price = _price(model)
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None
    return prompt_tokens * price[0] + completion_tokens * price[1]


@functools.lru_cache(maxsize=256)
def _price(model: str) -> tuple[float, float] | None:
    """(input, output) USD per token of ``model`` in litellm's bundled price table (the one
    litellm itself reads, see :mod:`sotopia_are.llm._litellm`), read without importing
    litellm; None when it has none."""
    table = _price_table()
    if table is None:
        return None
    name = wire_model(model)
    provider = _provider(model)
    for key in (name, model, f"{provider}/{name}" if provider else name):
        entry = table.get(key)
        if not isinstance(entry, dict):
            continue
        if entry.get("mode", "chat") != "chat":
            continue
        given, taken = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if isinstance(given, int | float) and isinstance(taken, int | float):
            return float(given), float(taken)
    return None


def _price_table() -> dict[str, Any] | None:
    # Read once per model looked up (cached above), not kept: the table is megabytes.
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)))
    try:
        table = json.loads((path / "model_prices_and_context_window_backup.json").read_bytes())
    except (OSError, ValueError):
        return None
    return table if isinstance(table, dict) else None


# -- connection pools ---------------------------------------------------------------------


class _Pools:
    """One aiohttp client session (a keep-alive connection pool) per event loop and
    server. A loop's sessions are closed when the loop shuts down (``asyncio.run`` and
    ``asyncio.Runner`` finalise asynchronous generators then, and a generator held here
    closes them), or by :func:`aclose`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, tuple[aiohttp.ClientSession, str]]
        ] = weakref.WeakKeyDictionary()
        self._keepers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncIterator[None]] = (
            weakref.WeakKeyDictionary()
        )

    def session(self, api_base: str) -> tuple[aiohttp.ClientSession, str]:
        """The running loop's session for ``api_base`` and the chat completions URL."""
        loop = asyncio.get_running_loop()
        sessions = self._by_loop.get(loop)
        if sessions is not None:
            found = sessions.get(api_base)
            if found is not None and not found[0].closed:
                return found
        with self._lock:
            sessions = self._by_loop.get(loop)
            if sessions is None:
                sessions = self._by_loop[loop] = {}
                self._keepers[loop] = self._keep(loop, sessions)
            found = sessions.get(api_base)
            if found is None or found[0].closed:
                url = _chat_url(api_base)
                found = sessions[api_base] = (_new_session(_proxy_for(url)), url)
            return found

    def _keep(
        self,
        loop: asyncio.AbstractEventLoop,
        sessions: dict[str, tuple[aiohttp.ClientSession, str]],
    ) -> AsyncIterator[None]:
        """Start a generator that closes ``sessions`` when the loop finalises it."""

        async def keeper() -> AsyncIterator[None]:
            try:
                yield
            finally:
                await _close_all(sessions)
                with self._lock:
                    self._by_loop.pop(loop, None)
                    self._keepers.pop(loop, None)

        generator = keeper()
        # Its first step registers it with the running loop (the loop's asyncgen hook) and
        # stops at the yield without suspending.
        step = generator.__anext__()
        with contextlib.suppress(StopIteration):
            step.send(None)  # type: ignore[attr-defined]
        return generator

    async def aclose(self) -> None:
        """Close the running loop's sessions."""
        loop = asyncio.get_running_loop()
        with self._lock:
            sessions = self._by_loop.pop(loop, None)
        if sessions:
            await _close_all(sessions)


async def _close_all(sessions: dict[str, tuple[aiohttp.ClientSession, str]]) -> None:
    for session, _url in list(sessions.values()):
        if not session.closed:
            await session.close()
    sessions.clear()


def _new_session(proxy: str | None) -> aiohttp.ClientSession:
    import aiohttp

    connector = aiohttp.TCPConnector(
        limit=0,  # LLMSession's per-endpoint limit bounds requests in flight
        # Below the 5 s idle timeout of uvicorn (vLLM, SGLang): a connection the server
        # is about to close is not reused.
        keepalive_timeout=4.0,
    )
    # The proxy is looked up once per server here: aiohttp's trust_env looks it (and
    # ~/.netrc) up again on every request, in a thread pool, which doubled its CPU.
    # Bodies are inflated by _read_capped, a bounded step at a time.
    return aiohttp.ClientSession(connector=connector, proxy=proxy, auto_decompress=False)


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTP(S)_PROXY`` unless ``NO_PROXY``
    covers its host), as litellm's client would use; None for none."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


def _chat_url(api_base: str) -> str:
    if not api_base.lower().startswith(("http://", "https://")):
        raise InvalidURLError(f"api_base {api_base!r} is not an http(s) URL")
    return api_base.rstrip("/") + "/chat/completions"


_POOLS = _Pools()


async def aclose() -> None:
    """Close the HTTP transport's connections on the running event loop (they are closed
    anyway when the loop shuts down under ``asyncio.run``)."""
    await _POOLS.aclose()
