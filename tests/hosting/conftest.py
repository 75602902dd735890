"""The hosting tests' fixtures: stand-in LLM seats (``play_rule``); the store is the suite's."""

import pytest

from sotopia_are.testing import LocalLLMServer, play_rule


@pytest.fixture
def stand_in(llm_server: LocalLLMServer) -> LocalLLMServer:
    """The local LLM server answering like a model would (valid, varied actions)."""
    llm_server.rule = play_rule
    return llm_server
