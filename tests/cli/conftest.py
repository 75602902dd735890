"""Fixtures of the CLI tests: one embedded Redis for the module, emptied for each test."""

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from sotopia_are.storage import EmbeddedRedis


@pytest.fixture(scope="module")
def embedded_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The unix-socket URL of an embedded Redis shared by a test module."""
    with EmbeddedRedis(tmp_path_factory.mktemp("cli-redis")) as client:
        yield f"unix://{client.connection_pool.connection_kwargs['path']}"


@pytest.fixture
def redis_url(embedded_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """``REDIS_OM_URL`` pointing at the emptied embedded server; the working directory is
    a fresh tmp dir (the demo writes its export there)."""
    redis.Redis.from_url(embedded_url).flushdb()
    monkeypatch.setenv("REDIS_OM_URL", embedded_url)
    monkeypatch.chdir(tmp_path)
    return embedded_url
