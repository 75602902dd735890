"""Fixtures of the social tests: LLM sessions aimed at the local test server."""

from collections.abc import Callable
from typing import Any

import pytest

from sotopia_are.llm import LLMConfig, LLMSession, RetryPolicy
from sotopia_are.testing import LocalLLMServer


@pytest.fixture
def social_session(llm_server: LocalLLMServer) -> Callable[..., LLMSession]:
    """Build a session aimed at ``llm_server`` with fast retries; kwargs go to LLMSession."""

    def make(**session: Any) -> LLMSession:
        config = LLMConfig(
            api_base=llm_server.url,
            api_key="sk-test",
            timeout_s=5.0,
            retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.02),
        )
        return LLMSession(config, **session)

    return make
