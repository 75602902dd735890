"""One request to a model through litellm, with litellm's own retries switched off.

Retries happen in :mod:`sotopia_are.llm.retry` instead, so that every request that
reaches the provider is one recorded attempt and the accounting is exact.

A keyless server at an ``api_base`` (vLLM, Ollama, llama.cpp) is sent a placeholder key
when no key is given from any source: such servers ignore it, but litellm's OpenAI
client refuses to send a request without one. A provider's default endpoint (no
``api_base``) never gets the placeholder, so a missing key there fails at once.
"""

from __future__ import annotations

from typing import Any

from sotopia_are.llm._litellm import load_litellm
from sotopia_are.llm.config import Endpoint
from sotopia_are.llm.request import LLMRequest, LLMResponse

__all__ = ["PLACEHOLDER_KEY", "missing_key_variables", "send"]

PLACEHOLDER_KEY = "sk-no-key-needed"
"""The key sent to an ``api_base`` when no key is given (see the module docstring)."""


async def send(request: LLMRequest, endpoint: Endpoint, timeout_s: float) -> LLMResponse:
    """Send ``request`` once to ``endpoint`` and return the answer with usage and cost.

    Raises litellm's exceptions unchanged.
    """
    litellm = load_litellm()
    kwargs: dict[str, Any] = dict(request.params)
    if endpoint.api_base is not None:
        kwargs["api_base"] = endpoint.api_base
    key = _key_to_send(endpoint)
    if key is not None:
        kwargs["api_key"] = key
    response = await litellm.acompletion(
        model=request.model,
        messages=[m.model_dump() for m in request.messages],
        timeout=timeout_s,
        num_retries=0,  # litellm's retry wrapper
        max_retries=0,  # the provider SDK's (openai's) own retries
        **kwargs,
    )
    usage = getattr(response, "usage", None)
    return LLMResponse(
        text=response.choices[0].message.content or "",
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        cost_usd=_cost(litellm, response),
    )


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
