"""Choosing and reaching a server: the embedded default, REDIS_OM_URL, passwords, failures."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from redis_servers import RedisServerProcess, free_port

from sotopia_are.storage import (
    DATA_DIR_ENV,
    REDIS_URL_ENV,
    AgentProfile,
    EmbeddedRedis,
    StorageUnavailableError,
    connect,
    default_data_dir,
    redact_url,
)


def test_storage_unreachable_server_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    monkeypatch.setenv(REDIS_URL_ENV, url)
    started = time.monotonic()
    with pytest.raises(StorageUnavailableError) as caught:
        connect()
    message = str(caught.value)
    assert url in message and "REDIS_OM_URL" in message and "unset" in message
    assert time.monotonic() - started < 5


def test_storage_url_argument_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    monkeypatch.setenv(REDIS_URL_ENV, f"redis://127.0.0.1:{free_port()}/0")
    with connect(redis_url) as store:
        store.ping()
    with pytest.raises(StorageUnavailableError, match="the url given"):
        connect(f"redis://127.0.0.1:{free_port()}/0")


def test_storage_malformed_url_is_a_clear_error() -> None:
    with pytest.raises(StorageUnavailableError, match="cannot use Redis at"):
        connect("http://example.invalid")


def test_storage_password_urls(redis_server: Callable[..., RedisServerProcess]) -> None:
    server = redis_server(password="s3cret pass")
    good = f"redis://:s3cret%20pass@127.0.0.1:{server.port}/0"
    with connect(good) as store:
        store.save(AgentProfile(first_name="Ann", pk="ann"))
        assert "s3cret" not in store.location
    for bad in (
        f"redis://:wrong@127.0.0.1:{server.port}/0",
        f"redis://127.0.0.1:{server.port}/0",
    ):
        with pytest.raises(StorageUnavailableError) as caught:
            connect(bad)
        assert "wrong" not in str(caught.value)
    # A refused connection wrote nothing: the one record is the one saved above.
    check = redis.Redis(port=server.port, password="s3cret pass")
    assert check.keys("*") == [b"sotopia_are:AgentProfile:ann"]
    check.close()


def test_storage_redact_url() -> None:
    assert redact_url("rediss://user:pw@host:6380/1") == "rediss://user:***@host:6380/1"
    assert redact_url("redis://:pw@host") == "redis://:***@host"
    assert redact_url("redis://host:6379") == "redis://host:6379"


def test_storage_default_data_dir() -> None:
    assert default_data_dir({DATA_DIR_ENV: "/data/x"}) == Path("/data/x")
    assert default_data_dir({"XDG_DATA_HOME": "/xdg"}) == Path("/xdg/sotopia-are")
    assert default_data_dir({}).parts[-3:] == (".local", "share", "sotopia-are")


def test_storage_embedded_default_persists_across_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(REDIS_URL_ENV, raising=False)
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    with connect() as store:
        assert str(tmp_path / "data") in store.location
        assert store.embedded is not None
        socket_path = Path(store.embedded.socket_path)
        store.save(AgentProfile(first_name="Ann", pk="ann"))
    assert not socket_path.exists()  # the last user shut it down
    assert (tmp_path / "data" / "appendonly.aof").exists()
    # The append-only file is the one copy: no snapshot saved (at a batch's end, that took
    # seconds on a large store), and the next run reads everything back from it.
    assert not (tmp_path / "data" / "redis.db").exists()
    with connect() as store:
        assert store.get(AgentProfile, "ann").first_name == "Ann"
        assert store.client.config_get("save") == {"save": ""}
        # Nor is the file rewritten while a batch writes its first hundreds of megabytes.
        size = store.client.config_get("auto-aof-rewrite-min-size")
        assert int(size["auto-aof-rewrite-min-size"]) == 1 << 30
        # Lua's collector paced for the store's scripts (its default is 200).
        assert store.client.eval(_LUA_GC_PAUSE, 0) == 1000


# The pause of Lua's collector in the server, left as it was.
_LUA_GC_PAUSE = "local p = collectgarbage('setpause', 200); collectgarbage('setpause', p); return p"


_OTHER_PROCESS = """
import sys
from sotopia_are.storage import AgentProfile, connect
with connect(data_dir=sys.argv[1]) as store:
    store.save(AgentProfile(first_name="Bo", pk="bo"))
    print(store.embedded.pid)
"""


def test_storage_two_processes_share_one_embedded_server(tmp_path: Path) -> None:
    with connect(data_dir=tmp_path) as store:
        assert store.embedded is not None
        store.save(AgentProfile(first_name="Ann", pk="ann"))
        other = subprocess.run(
            [sys.executable, "-c", _OTHER_PROCESS, str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert int(other.stdout) == store.embedded.pid  # joined, did not start a second
        assert store.get(AgentProfile, "bo").first_name == "Bo"
        store.ping()  # the other process leaving did not stop the server under us
    with connect(data_dir=tmp_path) as store:
        assert {p.pk for p in store.all(AgentProfile)} == {"ann", "bo"}


def test_storage_embedded_survives_a_killed_client(tmp_path: Path) -> None:
    # A process killed outright leaves the server running; the next run joins it.
    code = (
        "import os, sys\n"
        "from sotopia_are.storage import AgentProfile, connect\n"
        "store = connect(data_dir=sys.argv[1])\n"
        "store.save(AgentProfile(first_name='Ann', pk='ann'))\n"
        "os.kill(os.getpid(), 9)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], timeout=60, check=False)
    with connect(data_dir=tmp_path) as store:
        assert store.get(AgentProfile, "ann").first_name == "Ann"


def test_storage_unusable_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StorageUnavailableError, match=DATA_DIR_ENV):
        EmbeddedRedis(blocker / "data").start()


def test_storage_data_dir_fixture_isolates_connect(storage_data_dir: str) -> None:
    with connect() as store:
        assert storage_data_dir in store.location
        store.save(AgentProfile(first_name="Ann"))
    assert (Path(storage_data_dir) / "appendonly.aof").exists()
