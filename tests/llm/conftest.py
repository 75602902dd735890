"""Fixtures of the LLM-layer tests: the test templates, and more retries than elsewhere."""

from pathlib import Path
from typing import Any

import pytest

from sotopia_are.llm import PromptLibrary, RetryPolicy

TEST_PROMPTS = Path(__file__).parent / "prompts"


@pytest.fixture
def session_config() -> dict[str, Any]:
    """Four fast attempts, so retry tests see several failures before success."""
    return {
        "timeout_s": 2.0,
        "retry": RetryPolicy(max_attempts=4, initial_backoff_s=0.01, max_backoff_s=0.05),
    }


@pytest.fixture
def prompts() -> PromptLibrary:
    """The packaged templates plus the test templates under ``test/``."""
    return PromptLibrary(TEST_PROMPTS)
