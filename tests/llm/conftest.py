"""Fixtures of the LLM-layer tests: test templates and fast-retrying sessions."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sotopia_are.llm import LLMConfig, LLMSession, PromptLibrary, RetryPolicy
from sotopia_are.testing import LocalLLMServer

TEST_PROMPTS = Path(__file__).parent / "prompts"
FAST_RETRY = RetryPolicy(max_attempts=4, initial_backoff_s=0.01, max_backoff_s=0.05)


@pytest.fixture
def prompts() -> PromptLibrary:
    """The packaged templates plus the test templates under ``test/``."""
    return PromptLibrary(TEST_PROMPTS)


@pytest.fixture
def make_session(llm_server: LocalLLMServer, prompts: PromptLibrary) -> Callable[..., LLMSession]:
    """Build a session aimed at ``llm_server`` with fast retries; kwargs go to LLMConfig
    (``session_kwargs`` to LLMSession)."""

    def make(session_kwargs: dict[str, Any] | None = None, **config: Any) -> LLMSession:
        settings: dict[str, Any] = {
            "api_base": llm_server.url,
            "api_key": "sk-test",
            "timeout_s": 2.0,
            "retry": FAST_RETRY,
            **config,
        }
        return LLMSession(LLMConfig(**settings), prompts=prompts, **(session_kwargs or {}))

    return make
