"""Fixtures of the evaluation tests: sessions aimed at the local LLM server, test data."""

from collections.abc import Callable
from typing import Any

import pytest

from sotopia_are.llm import LLMConfig, LLMSession, RetryPolicy
from sotopia_are.messages import ScriptBackground
from sotopia_are.testing import LocalLLMServer

FAST_RETRY = RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.02)


@pytest.fixture
def make_session(llm_server: LocalLLMServer) -> Callable[..., LLMSession]:
    """A session aimed at ``llm_server`` (schema in the prompt); kwargs go to LLMConfig."""

    def make(**config: Any) -> LLMSession:
        settings: dict[str, Any] = {
            "api_base": llm_server.url,
            "api_key": "sk-test",
            "timeout_s": 5.0,
            "retry": FAST_RETRY,
            "output_mode": "prompt",
            **config,
        }
        return LLMSession(LLMConfig(**settings))

    return make


@pytest.fixture
def bakery() -> ScriptBackground:
    """The background of examples/scripts/bakery_negotiation.txt."""
    return ScriptBackground(
        scenario=(
            "A small neighbourhood bakery, ten minutes before closing. A café owner wants "
            "to buy the day's unsold bread in bulk."
        ),
        agent_names=["Mara Quinn", "Teo Alvarez"],
        agent_backgrounds=[
            "Mara Quinn owns the bakery and hates throwing bread away, but her margins are thin.",
            "Teo Alvarez runs a café two streets away and is opening a sandwich menu next week.",
        ],
        agent_goals=[
            "Sell the unsold loaves for at least 60% of the shelf price.",
            "Secure a standing order for day-old bread at half price or less.",
        ],
    )
