"""An optional response cache keyed on the exact request (model, messages, parameters).

A hit is answered without reaching the provider. With a ``path`` the cache persists as
JSONL: entries already in the file are loaded, new ones appended.
"""

from __future__ import annotations

import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sotopia_are.llm.request import LLMRequest, LLMResponse

__all__ = ["CacheEntry", "ResponseCache"]


class CacheEntry(BaseModel):
    """One line of a cache file."""

    model_config = ConfigDict(extra="forbid")

    key: str
    response: LLMResponse


class ResponseCache:
    """Maps requests to responses; ``hits`` and ``misses`` count lookups."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.hits = 0
        self.misses = 0
        self._entries: dict[str, LLMResponse] = {}
        self._lock = threading.Lock()
        if self.path is not None and self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    entry = CacheEntry.model_validate_json(line)
                    self._entries[entry.key] = entry.response

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, request: LLMRequest) -> LLMResponse | None:
        """The cached response to ``request``, or None."""
        response = self._entries.get(request.key())
        if response is None:
            self.misses += 1
        else:
            self.hits += 1
        return response

    def put(self, request: LLMRequest, response: LLMResponse) -> None:
        """Remember ``response`` as the answer to ``request``."""
        entry = CacheEntry(key=request.key(), response=response)
        with self._lock:
            self._entries[entry.key] = response
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(entry.model_dump_json() + "\n")
