"""What is sent to a model and what comes back, in the form the cache and replay store.

An :class:`LLMRequest` is exactly what identifies a request: model, messages and
parameters. Its :meth:`~LLMRequest.key` is the cache and replay key; the endpoint
(``api_base``, ``api_key``) is deliberately not part of it, so a run recorded against one
server replays against any other.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue

__all__ = ["LLMRequest", "LLMResponse", "Message", "Role"]

Role = Literal["system", "user", "assistant"]


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: str


class LLMRequest(BaseModel):
    """One chat-completion request: model, messages and request parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    messages: tuple[Message, ...]
    params: dict[str, JsonValue] = {}

    def key(self) -> str:
        """A stable hash of the request (same model, messages and params ⇒ same key)."""
        canonical = json.dumps(
            self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode()).hexdigest()


class LLMResponse(BaseModel):
    """One model answer: its text, token usage, cost in USD when known, and the seconds the
    server spent computing it when it reports them (``service_s``; llama.cpp does)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    service_s: float | None = None
