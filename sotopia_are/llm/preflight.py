"""Preflight: can every model a study calls be called as configured? Asked before any
episode is created, so a configuration mistake fails in seconds and leaves nothing stored.

Each distinct endpoint (model, ``api_base``, key, transport) is checked once per process
(a passed check is remembered; a failed one is asked again next time, after the fix):

1. **known provider**: litellm resolves the model's provider (``litellm.get_llm_provider``;
   an ``openai/`` model at an ``api_base`` sent over HTTP needs no litellm);
2. **key present**: at a provider's own endpoint, the key litellm expects
   (``litellm.validate_environment``) or an ``api_key``; a server at an ``api_base``
   needs none;
3. **endpoint reachable**: ``GET {api_base}/models`` answers within
   :data:`PREFLIGHT_TIMEOUT_S` (a 401/403 there is a rejected key);
4. **model served**: when that answer lists models (llama.cpp, vLLM, Ollama, LM Studio
   do), the model is among them (without its ``openai/`` prefix; Ollama's ``:latest``
   tag may be left off); else ``GET {api_base}/models/{model}`` (OpenAI's "retrieve
   model") answering 200 says it is served;
5. **a tiny request** (``max_tokens=1``) where nothing above could tell: a provider's own
   endpoint (is the key accepted, the model known?) and a server that neither lists nor
   retrieves its models. It is not part of any episode and not recorded with one.

Anything else a request can meet (a rate limit, a 5xx, a request the server rejects, a
slow answer) is not a configuration mistake: the run's own retries and records handle it.
A session replaying a recording calls no model and is not checked.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sotopia_are.llm._litellm import load_litellm
from sotopia_are.llm.config import API_BASE_ENV, API_KEY_ENV, Endpoint, LLMConfig
from sotopia_are.llm.errors import (
    ConfigurationError,
    MalformedReplyError,
    PermanentLLMError,
    RequestRejectedError,
)
from sotopia_are.llm.failures import describe, is_provider_error, is_transient, permanent_error
from sotopia_are.llm.http_pools import get_once
from sotopia_are.llm.http_transport import OPENAI_COMPATIBLE_PROVIDERS, wire_model
from sotopia_are.llm.request import LLMRequest, Message
from sotopia_are.llm.session import LLMSession
from sotopia_are.llm.transport import missing_key_variables, send

__all__ = ["PREFLIGHT_TIMEOUT_S", "ModelUse", "apreflight", "preflight"]

PREFLIGHT_TIMEOUT_S = 5.0
"""Seconds the endpoint's ``/models`` may take to answer: a running server answers it at
once, even while its decoding slots are busy."""

_MAX_LISTING_BYTES = 4 * 1024 * 1024
"""A model listing longer than this is read only this far (and then is not JSON)."""

_SHOWN_MODELS = 12
"""How many served models a "not served" message names."""

_API_BASE_FIX = f"--api-base, {API_BASE_ENV} or LLMConfig.api_base"

_CHECKED: set[Endpoint] = set()
"""The endpoints that passed in this process (process-wide, as the concurrency limits are:
a batch's parent checks, its workers do not ask again)."""


@dataclass(frozen=True)
class ModelUse:
    """A model a study will call: ``model`` through ``via`` (a session, or the config a
    session will be made from), by ``who`` (for messages: ``"agent Mara"``, ``"the
    judge"``)."""

    model: str
    via: LLMSession | LLMConfig
    who: str = ""


async def apreflight(uses: Iterable[ModelUse]) -> None:
    """Check every distinct endpoint of ``uses`` (concurrently, each once per process; see
    the module). :class:`ConfigurationError` naming the fix of every endpoint that fails
    (all of them in one message); a replaying session's uses are skipped."""
    pending: dict[Endpoint, tuple[float, list[str]]] = {}
    for use in uses:
        if isinstance(use.via, LLMSession):
            if use.via.replayer is not None:
                continue  # answered from a recording: no model is called
            config = use.via.config
        else:
            config = use.via
        try:
            endpoint = config.endpoint(use.model)
        except PermanentLLMError as error:  # transport 'http' without an api_base
            raise ConfigurationError(str(error)) from error
        if endpoint in _CHECKED:
            continue
        _timeout, users = pending.setdefault(endpoint, (config.timeout_s, []))
        if use.who and use.who not in users:
            users.append(use.who)
    checks = [_check(endpoint, timeout, users) for endpoint, (timeout, users) in pending.items()]
    results = await asyncio.gather(*checks, return_exceptions=True)
    problems: list[str] = []
    for endpoint, result in zip(pending, results, strict=True):
        if result is None:
            _CHECKED.add(endpoint)
        elif isinstance(result, ConfigurationError):
            problems.append(str(result))
        else:  # a bug of ours (or Ctrl-C): not a configuration mistake
            raise result
    if problems:
        raise ConfigurationError("; and ".join(problems))


def preflight(uses: Iterable[ModelUse]) -> None:
    """:func:`apreflight` on a new event loop (outside asyncio)."""
    asyncio.run(apreflight(uses))


async def _check(endpoint: Endpoint, timeout_s: float, users: Sequence[str]) -> None:
    name = f"model {endpoint.model!r}" + (f" ({', '.join(users)})" if users else "")
    if endpoint.transport == "litellm":
        _known_provider(endpoint, users)
    if endpoint.api_base is None:
        if endpoint.api_key is None:
            missing = missing_key_variables(endpoint.model)
            if missing:
                raise ConfigurationError(
                    f"{name} needs an API key at its provider's endpoint and none is set: set "
                    f"{' or '.join(missing)}, or pass one (--api-key, {API_KEY_ENV} or "
                    f"LLMConfig.api_key); for a local OpenAI-compatible server, give its "
                    f"address instead ({_API_BASE_FIX})"
                )
        await _probe(endpoint, timeout_s, name, users)
        return
    status, body = await _get(endpoint, "/models", name)
    listed = _listed_models(body) if status == 200 else None
    if listed is not None:
        if not _served(endpoint.model, listed):
            raise ConfigurationError(_not_served(endpoint, name, listed))
        return
    quoted = wire_model(endpoint.model).replace("/", "%2F")
    status, _body = await _get(endpoint, f"/models/{quoted}", name)
    if status != 200:
        await _probe(endpoint, timeout_s, name, users)


def _known_provider(endpoint: Endpoint, users: Sequence[str]) -> None:
    """:class:`ConfigurationError` when litellm cannot tell which provider serves the
    model (a bare ``qwen15``: no ``openai/`` prefix)."""
    try:
        load_litellm().get_llm_provider(endpoint.model, api_base=endpoint.api_base)
    except Exception as error:  # litellm raises its BadRequestError, or others, untyped
        fix = permanent_error(error, endpoint.model, endpoint.api_base)
        raise ConfigurationError(_for(users, str(fix))) from None


def _for(users: Sequence[str], message: str) -> str:
    """``message`` (which names the model) preceded by who uses the model, if known."""
    return f"{', '.join(users)}: {message}" if users else message


async def _get(endpoint: Endpoint, path: str, name: str) -> tuple[int, bytes]:
    """The status and body (empty past :data:`_MAX_LISTING_BYTES`) of ``GET
    {api_base}{path}``; :class:`ConfigurationError` when the server cannot be reached or
    rejects the key."""
    base = str(endpoint.api_base)
    if not base.lower().startswith(("http://", "https://")):
        raise ConfigurationError(
            f"{name}: api_base {base!r} is not an http(s) URL; give one such as "
            f"http://localhost:8000/v1 ({_API_BASE_FIX})"
        )
    unreachable = (
        f"{name}: the server at {base} cannot be reached ({{}}); start it, or check its "
        f"address and port ({_API_BASE_FIX})"
    )
    try:
        reply = await get_once(
            base.rstrip("/") + path,
            _authorization(endpoint),
            _MAX_LISTING_BYTES,
            PREFLIGHT_TIMEOUT_S,
        )
    except TimeoutError:
        raise ConfigurationError(
            unreachable.format(f"no answer within {PREFLIGHT_TIMEOUT_S:g} s")
        ) from None
    except ValueError as error:
        raise ConfigurationError(
            f"{name}: api_base {base!r} is not a valid URL ({error}); give one such as "
            f"http://localhost:8000/v1 ({_API_BASE_FIX})"
        ) from None
    except OSError as error:
        raise ConfigurationError(unreachable.format(describe(error))) from None
    status, body = reply.status, reply.body or b""
    if status in (401, 403):
        variables = _key_variables(endpoint.model)
        where = " or ".join([*variables, API_KEY_ENV])
        raise ConfigurationError(
            f"{name}: the server at {base} rejected the key (HTTP {status}); pass the key it "
            f"expects (--api-key, {where} or LLMConfig.api_key)"
        )
    return status, body


def _authorization(endpoint: Endpoint) -> dict[str, str]:
    """The key the run's requests will carry, when there is one (a keyless server is
    asked without)."""
    key = endpoint.api_key or next(
        (os.environ[v] for v in _key_variables(endpoint.model) if os.environ.get(v)), None
    )
    return {"Authorization": f"Bearer {key}"} if key else {}


def _key_variables(model: str) -> list[str]:
    prefix, slash, _name = model.partition("/")
    variable = OPENAI_COMPATIBLE_PROVIDERS.get(prefix) if slash else None
    return [variable] if variable else []


def _listed_models(body: bytes) -> list[str] | None:
    """The model ids of an OpenAI-style listing (``{"data": [{"id": …}, …]}``), or None
    when ``body`` is not one."""
    try:
        listing: Any = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return None
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        return None
    return [str(item["id"]) for item in data if isinstance(item, dict) and "id" in item]


def _served(model: str, listed: Sequence[str]) -> bool:
    """Whether ``model`` is among ``listed``: as given, as the server is sent it, or
    without its provider prefix; Ollama's default tag ``:latest`` may be left off."""
    names = {model, wire_model(model), model.partition("/")[2] or model}
    return any(name in listed or f"{name}:latest" in listed for name in names)


def _not_served(endpoint: Endpoint, name: str, listed: Sequence[str]) -> str:
    if not listed:
        return f"{name}: the server at {endpoint.api_base} serves no models (it lists none)"
    shown = ", ".join(listed[:_SHOWN_MODELS]) + (" …" if len(listed) > _SHOWN_MODELS else "")
    prefix, slash, _rest = endpoint.model.partition("/")
    example = f"{prefix}/{listed[0]}" if slash else listed[0]
    return (
        f"{name} is not served at {endpoint.api_base}, which serves: {shown}; name one of "
        f"them (e.g. {example!r}), or check the address ({_API_BASE_FIX})"
    )


async def _probe(endpoint: Endpoint, timeout_s: float, name: str, users: Sequence[str]) -> None:
    """Send a one-token request; :class:`ConfigurationError` if it shows a configuration
    mistake (unknown model, rejected or missing key, unreachable endpoint)."""
    request = LLMRequest(
        model=endpoint.model,
        messages=(Message(role="user", content="Reply with OK."),),
        params={"max_tokens": 1},
    )
    try:
        await send(request, endpoint, timeout_s)
    except MalformedReplyError:
        return  # it answered: garbled answers are the run's to retry
    except Exception as error:
        if not is_provider_error(error):
            raise
        if is_transient(error):
            if _unreachable(error):
                where = endpoint.api_base or "its provider's endpoint"
                raise ConfigurationError(
                    f"{name}: {where} cannot be reached ({describe(error)}); check the "
                    f"network, or the address ({_API_BASE_FIX})"
                ) from None
            return  # busy, rate-limited or failing: not a configuration mistake
        fix = permanent_error(error, endpoint.model, endpoint.api_base)
        if isinstance(fix, RequestRejectedError):
            return  # this request's parameters, not the configuration
        raise ConfigurationError(_for(users, str(fix))) from None


def _unreachable(error: BaseException) -> bool:
    """Whether ``error`` is a failure to connect (not a slow or failing answer)."""
    from sotopia_are.llm import http_transport

    if isinstance(error, http_transport.HTTPTransportError):
        return isinstance(error, http_transport.APIConnectionError)
    return isinstance(error, load_litellm().APIConnectionError)
