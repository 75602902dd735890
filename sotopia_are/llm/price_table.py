"""What an answer over the HTTP transport cost, from litellm's bundled price table.

The table litellm itself reads (see :mod:`sotopia_are.llm._litellm`), read without
importing litellm: a model with a price there (``openai/gpt-4o-mini`` behind a proxy) is
priced as litellm would price it; any other (a local model) has no cost (None).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

from sotopia_are.llm.openai_compatible import provider_of, wire_model

__all__ = ["cost"]


def cost(model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
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
    provider = provider_of(model)
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
