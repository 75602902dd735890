"""The hosting tests' fixtures: stand-in LLM seats (``play_rule``) and the embedded store."""

from collections.abc import Iterator

import pytest

from sotopia_are.storage import EpisodeStore, connect
from sotopia_are.testing import LocalLLMServer, play_rule


@pytest.fixture
def stand_in(llm_server: LocalLLMServer) -> LocalLLMServer:
    """The local LLM server answering like a model would (valid, varied actions)."""
    llm_server.rule = play_rule
    return llm_server


@pytest.fixture
def store(storage_data_dir: str) -> Iterator[EpisodeStore]:
    with connect() as opened:
        yield opened
