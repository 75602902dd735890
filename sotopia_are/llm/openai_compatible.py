"""Which models the HTTP transport speaks to, under which name and with which key.

A model with an OpenAI-compatible provider prefix (``openai/``, ``hosted_vllm/``) at an
``api_base`` is sent over the lean HTTP transport (:mod:`sotopia_are.llm.http_transport`)
under ``auto``; the server is sent its name without that prefix, and the key is the
endpoint's, else the provider's variable, else a placeholder — as litellm does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from sotopia_are.llm.errors import PermanentLLMError

if TYPE_CHECKING:
    from sotopia_are.llm.config import Endpoint

__all__ = [
    "OPENAI_COMPATIBLE_PROVIDERS",
    "PLACEHOLDER_KEY",
    "TransportChoice",
    "api_key_for",
    "choose_transport",
    "key_variables",
    "provider_of",
    "wire_model",
]

TransportChoice = Literal["auto", "http", "litellm"]
"""How requests are sent: ``http`` (:mod:`~sotopia_are.llm.http_transport`, to an
OpenAI-compatible ``api_base``), ``litellm``, or ``auto``: ``http`` for an ``openai/`` or
``hosted_vllm/`` model at an ``api_base``, litellm for everything else (every named
provider's own endpoint)."""

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

    ``http`` without an ``api_base`` is a :class:`PermanentLLMError`: the HTTP transport
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
    return "http" if provider_of(model) in OPENAI_COMPATIBLE_PROVIDERS else "litellm"


def provider_of(model: str) -> str | None:
    """The provider prefix of ``model`` (``openai`` of ``openai/gpt-4o``; None without one)."""
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
    variable = OPENAI_COMPATIBLE_PROVIDERS.get(provider_of(model) or "")
    return [variable] if variable is not None and not os.environ.get(variable) else []


def api_key_for(endpoint: Endpoint) -> str:
    """The key sent to ``endpoint``: its own, else its provider's variable, else
    :data:`PLACEHOLDER_KEY`."""
    if endpoint.api_key is not None:
        return endpoint.api_key
    variable = OPENAI_COMPATIBLE_PROVIDERS.get(provider_of(endpoint.model) or "")
    return (os.environ.get(variable) if variable else None) or PLACEHOLDER_KEY
