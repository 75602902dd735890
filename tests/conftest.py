"""Test-wide settings and fixtures.

litellm must never reach for the network at import time; ``llm_server`` is a local
OpenAI-compatible server (see :mod:`sotopia_are.testing`) started fresh for each test, and
``make_session`` builds LLM sessions aimed at it. A test folder tunes those sessions by
overriding ``session_config`` (LLMConfig settings) or ``prompts`` in its own conftest.
"""

import os
import signal

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# A run started in the background by a shell without job control inherits Ctrl-C ignored,
# and so would every CLI the tests start and then interrupt: Python's own handler again
# (a handler becomes the default in an exec'd child, where Python installs its own).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import settings

from sotopia_are.llm import LLMConfig, LLMSession, PromptLibrary, RetryPolicy
from sotopia_are.storage import EpisodeStore, connect
from sotopia_are.testing import LocalLLMServer

# No wall-clock deadline for a property's example: the suite runs on shared two-core
# machines, where one example of a pure function took 276 ms beside a model server, and
# speed is measured in benchmarks/, not asserted in tests.
settings.register_profile("sotopia_are", deadline=None)
# CI (.ci/run) draws the same examples on every run, so that its verdict is the one a run
# of the same commit gave here; runs elsewhere draw fresh ones and keep exploring.
settings.register_profile("ci", parent=settings.get_profile("sotopia_are"), derandomize=True)
settings.load_profile(os.environ.get("SOTOPIA_ARE_HYPOTHESIS_PROFILE", "sotopia_are"))


@pytest.fixture
def llm_server() -> Iterator[LocalLLMServer]:
    """A running local LLM server; script it with ``enqueue`` or by setting ``rule``."""
    with LocalLLMServer() as server:
        yield server


@pytest.fixture
def session_config() -> dict[str, Any]:
    """LLMConfig settings of ``make_session`` sessions (fast retries, short timeouts)."""
    return {
        "timeout_s": 5.0,
        "retry": RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.02),
    }


@pytest.fixture
def prompts() -> PromptLibrary:
    """The prompt templates of ``make_session`` sessions (the packaged ones)."""
    return PromptLibrary()


@pytest.fixture
def make_session(
    llm_server: LocalLLMServer, session_config: dict[str, Any], prompts: PromptLibrary
) -> Callable[..., LLMSession]:
    """Build a session aimed at ``llm_server``: kwargs go to LLMConfig (over
    ``session_config``), ``session_kwargs`` to LLMSession."""

    def make(session_kwargs: dict[str, Any] | None = None, **config: Any) -> LLMSession:
        settings: dict[str, Any] = {
            "api_base": llm_server.url,
            "api_key": "sk-test",
            **session_config,
            **config,
        }
        return LLMSession(LLMConfig(**settings), prompts=prompts, **(session_kwargs or {}))

    return make


@pytest.fixture
def storage_data_dir(tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """An empty data directory for the embedded Redis, used by ``connect()`` with no
    arguments during the test (``REDIS_OM_URL`` is unset, ``SOTOPIA_ARE_DATA_DIR`` set)."""
    directory = os.path.join(tmp_path, "sotopia-are-data")
    monkeypatch.delenv("REDIS_OM_URL", raising=False)
    monkeypatch.setenv("SOTOPIA_ARE_DATA_DIR", directory)
    return directory


@pytest.fixture
def store(storage_data_dir: str) -> Iterator[EpisodeStore]:
    """A store on that empty embedded Redis, closed after the test."""
    with connect() as opened:
        yield opened
