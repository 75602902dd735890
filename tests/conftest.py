"""Test-wide settings and fixtures.

litellm must never reach for the network at import time; ``llm_server`` is a local
OpenAI-compatible server (see :mod:`sotopia_are.testing`) started fresh for each test.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from collections.abc import Iterator

import pytest

from sotopia_are.testing import LocalLLMServer


@pytest.fixture
def llm_server() -> Iterator[LocalLLMServer]:
    """A running local LLM server; script it with ``enqueue`` or by setting ``rule``."""
    with LocalLLMServer() as server:
        yield server
