"""Fixtures of the storage tests: every store test runs on the embedded server and, when
``redis-server`` is installed (CI installs it), on that server too."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from redis_servers import RedisServerProcess, redis_server_binary

from sotopia_are.storage import EmbeddedRedis, EpisodeStore, connect


@pytest.fixture(scope="session", params=["embedded", "redis-server"])
def redis_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The URL of a running server, shared by the session: the embedded one (through its
    unix socket) or ``redis-server`` on a loopback port."""
    directory = tmp_path_factory.mktemp(request.param)
    if request.param == "embedded":
        with EmbeddedRedis(directory) as client:
            yield f"unix://{client.connection_pool.connection_kwargs['path']}"
        return
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    server = RedisServerProcess(binary, directory).start()
    yield server.url
    server.stop()


@pytest.fixture
def store(redis_url: str) -> Iterator[EpisodeStore]:
    """A store on an emptied server."""
    with connect(redis_url) as opened:
        opened.client.flushdb()
        yield opened


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[Callable[..., RedisServerProcess]]:
    """Start ``redis-server`` processes (kwargs of :class:`RedisServerProcess`); all are
    stopped after the test. Skips the test if ``redis-server`` is not installed."""
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    started: list[RedisServerProcess] = []

    def start(*, persistent: bool = False, password: str | None = None) -> RedisServerProcess:
        directory = tmp_path / f"redis{len(started)}"
        server = RedisServerProcess(binary, directory, persistent=persistent, password=password)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def twins(redis_url: str) -> Iterator[tuple[redis.Redis[str], redis.Redis[str]]]:
    """Two clients of the server, on databases 14 and 15 (emptied after the test): a store
    taking steps its usual way and its twin taking them the general way."""
    pool = redis.Redis.from_url(redis_url, decode_responses=True).connection_pool
    fast, general = (
        redis.Redis(
            connection_pool=redis.ConnectionPool(
                connection_class=pool.connection_class, **{**pool.connection_kwargs, "db": db}
            )
        )
        for db in (14, 15)
    )
    yield fast, general
    for client in (fast, general):
        client.flushdb()
        client.close()
