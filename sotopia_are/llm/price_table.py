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
    name = wire_model(model)
    provider = provider_of(model)
    keys = (name, model, f"{provider}/{name}" if provider else name)
    text = _price_file()
    # A model the table does not name (a local one) is known so without parsing the
    # table: 3.5 MB of JSON, 160 M instructions, some 5 % of a batch driver's CPU.
    if text is None or not _may_name(text, keys):
        return None
    table = _parsed(text)
    if table is None:
        return None
    for key in keys:
        entry = table.get(key)
        if not isinstance(entry, dict):
            continue
        if entry.get("mode", "chat") != "chat":
            continue
        given, taken = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if isinstance(given, int | float) and isinstance(taken, int | float):
            return float(given), float(taken)
    return None


def _price_file() -> bytes | None:
    # Read once per model looked up (cached above), not kept: the table is megabytes.
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)))
    try:
        return (path / "model_prices_and_context_window_backup.json").read_bytes()
    except OSError:
        return None


def _may_name(text: bytes, keys: tuple[str, ...]) -> bool:
    """Whether the JSON ``text`` may hold any of ``keys`` as a key: False only when it
    holds none of them as a string at all, which shows in its bytes when it is UTF-8 and
    escapes nothing a name of plain characters could be spelt with (no ``\\u``, no
    ``\\/``: litellm's table has neither). The table's layout is not relied on (it is
    edited by hand: its keys are not all indented alike)."""
    if json.detect_encoding(text) != "utf-8" or b"\\u" in text or b"\\/" in text:
        return True
    for key in keys:
        if not key.isprintable() or '"' in key or "\\" in key:
            return True
        if b'"' + key.encode() + b'"' in text:
            return True
    return False


def _parsed(text: bytes) -> dict[str, Any] | None:
    try:
        table = json.loads(text)
    except ValueError:
        return None
    return table if isinstance(table, dict) else None
