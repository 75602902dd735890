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


@pytest.fixture
def storage_data_dir(tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """An empty data directory for the embedded Redis, used by ``connect()`` with no
    arguments during the test (``REDIS_OM_URL`` is unset, ``SOTOPIA_ARE_DATA_DIR`` set)."""
    directory = os.path.join(tmp_path, "sotopia-are-data")
    monkeypatch.delenv("REDIS_OM_URL", raising=False)
    monkeypatch.setenv("SOTOPIA_ARE_DATA_DIR", directory)
    return directory
