"""One request to a model through litellm, with litellm's own retries switched off.

Retries happen in :mod:`sotopia_are.llm.retry` instead, so that every request that
reaches the provider is one recorded attempt and the accounting is exact.
"""

from __future__ import annotations

from typing import Any

from sotopia_are.llm._litellm import load_litellm
from sotopia_are.llm.config import Endpoint
from sotopia_are.llm.request import LLMRequest, LLMResponse

__all__ = ["send"]


async def send(request: LLMRequest, endpoint: Endpoint, timeout_s: float) -> LLMResponse:
    """Send ``request`` once to ``endpoint`` and return the answer with usage and cost.

    Raises litellm's exceptions unchanged.
    """
    litellm = load_litellm()
    kwargs: dict[str, Any] = dict(request.params)
    if endpoint.api_base is not None:
        kwargs["api_base"] = endpoint.api_base
    if endpoint.api_key is not None:
        kwargs["api_key"] = endpoint.api_key
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
