"""Fixtures of the agents tests: sessions aimed at the local test server."""

from collections.abc import Callable
from typing import Any

import pytest

from sotopia_are.llm import LLMConfig, LLMSession, RetryPolicy
from sotopia_are.testing import LocalLLMServer


@pytest.fixture
def make_session(llm_server: LocalLLMServer) -> Callable[..., LLMSession]:
    """A session aimed at ``llm_server`` with fast retries; kwargs go to LLMConfig."""

    def make(**config: Any) -> LLMSession:
        settings: dict[str, Any] = {
            "api_base": llm_server.url,
            "api_key": "sk-test",
            "timeout_s": 2.0,
            "retry": RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.02),
            **config,
        }
        return LLMSession(LLMConfig(**settings))

    return make
