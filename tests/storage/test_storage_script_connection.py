"""The connection the store keeps for its scripts (EVALSHA): a connection cut in the
middle of a reply is retried as the client's retry settings say, else a storage error;
an error reply is raised as redis-py raises it and leaves the connection usable; a
forked child writes on a connection of its own, never on its parent's socket; threads
sharing the store each get their own reply."""

from __future__ import annotations

import hashlib
import os
import selectors
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, cast
from urllib.parse import urlsplit

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from sotopia_are.storage import (
    EpisodeLog,
    EpisodeStatus,
    EpisodeStore,
    StorageUnavailableError,
    connect,
)

ECHO = "return {ARGV[1], string.rep('y', 4000)}"
"""A script with a reply long enough to be cut in its middle."""
ECHO_SHA = hashlib.sha1(ECHO.encode()).hexdigest()


class CuttingProxy:
    """A proxy to the Redis server at ``url`` on a loopback port, which closes a
    connection halfway through the reply to an EVALSHA while ``cuts`` is above 0 (one
    cut each), and counts the EVALSHA commands each connection it accepted carried."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._unix = parts.path if parts.scheme == "unix" else None
        self._address = (parts.hostname or "127.0.0.1", parts.port or 6379)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self._listener.getsockname()[1]}/0"
        self.cuts = 0
        self.evalshas: list[int] = []  # per connection accepted, in order
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def _upstream(self) -> socket.socket:
        if self._unix is not None:
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self._unix)
            return upstream
        return socket.create_connection(self._address)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            with self._lock:
                index = len(self.evalshas)
                self.evalshas.append(0)
            threading.Thread(target=self._relay, args=(client, index), daemon=True).start()

    def _relay(self, client: socket.socket, index: int) -> None:
        upstream = self._upstream()
        cut_next_reply = False
        with selectors.DefaultSelector() as selector, client, upstream:
            selector.register(client, selectors.EVENT_READ, upstream)
            selector.register(upstream, selectors.EVENT_READ, client)
            while True:
                for key, _ in selector.select():
                    source: socket.socket = key.fileobj  # type: ignore[assignment]
                    data = source.recv(65536)
                    if not data:
                        return
                    if source is client:
                        sent = data.count(b"EVALSHA")
                        with self._lock:
                            self.evalshas[index] += sent
                            if sent and self.cuts > 0:
                                self.cuts -= 1
                                cut_next_reply = True
                    elif cut_next_reply:
                        client.sendall(data[: len(data) // 2])
                        return
                    key.data.sendall(data)


@pytest.fixture
def proxy(redis_url: str) -> Iterator[CuttingProxy]:
    """A proxy to the emptied server."""
    with redis.Redis.from_url(redis_url) as client:
        client.flushdb()
    opened = CuttingProxy(redis_url)
    yield opened
    opened.close()


def load_echo(store: EpisodeStore) -> None:
    cast(Any, store.client).script_load(ECHO)


def store_with_retries(url: str, retries: int) -> EpisodeStore:
    client = redis.Redis.from_url(url, decode_responses=True, retry=Retry(NoBackoff(), retries))
    return EpisodeStore(client, location="the proxy", url=url)


def test_a_reply_cut_in_its_middle_is_sent_again_on_a_new_connection(
    proxy: CuttingProxy,
) -> None:
    with store_with_retries(proxy.url, 2) as store:
        store.client.script_flush()
        load_echo(store)
        assert store._evalsha(ECHO_SHA, ECHO, [], ["first"])[0] == "first"
        proxy.cuts = 2
        assert store._evalsha(ECHO_SHA, ECHO, [], ["second"])[0] == "second"
        assert store._evalsha(ECHO_SHA, ECHO, [], ["third"])[0] == "third"
    # The script connection sent "first", then "second" three times (two cut), each on a
    # new connection after a cut, and "third" on the last.
    script_connections = [n for n in proxy.evalshas if n]
    assert script_connections == [2, 1, 2]


def test_a_reply_cut_with_no_retries_left_is_a_storage_error_and_then_recovers(
    proxy: CuttingProxy,
) -> None:
    with store_with_retries(proxy.url, 1) as store:
        store.start_episode(EpisodeLog(pk="cut"))
        store.append_call("cut", {"n": 0})  # the script loaded
        proxy.cuts = 2
        with pytest.raises(StorageUnavailableError, match="lost the connection"):
            store.append_call("cut", {"n": 1})
        # The next write reconnects; what the server holds is what the scripts wrote
        # (a cut reply's write happened: the retry wrote it again, as redis-py would).
        store.append_call("cut", {"n": 2})
        assert [call["n"] for call in store.read_calls("cut")] == [0, 1, 1, 2]


def test_a_reply_cut_under_default_settings_is_a_storage_error(proxy: CuttingProxy) -> None:
    with connect(proxy.url) as store:
        store.start_episode(EpisodeLog(pk="cut"))
        proxy.cuts = 1
        with pytest.raises(StorageUnavailableError, match="lost the connection"):
            store.finish_episode("cut", turns_played=0)
        # The step was written (its reply was lost); the next write connects again.
        store.append_call("cut", {"n": 1})
        assert store.get_episode("cut").status is EpisodeStatus.COMPLETE
        assert store.read_calls("cut") == [{"n": 1}]


def test_error_replies_are_redis_pys_and_leave_the_connection_usable(
    proxy: CuttingProxy,
) -> None:
    with connect(proxy.url) as store:
        store.client.script_flush()
        load_echo(store)
        failing = "return redis.error_reply('BOOM it failed')"
        sha = hashlib.sha1(failing.encode()).hexdigest()
        with pytest.raises(redis.ResponseError, match="BOOM it failed") as raised:
            store._evalsha(sha, failing, [], [])
        assert type(raised.value) is redis.ResponseError
        wrong = "return redis.call('GET', KEYS[1])"
        store.client.hset("a-hash", "f", "v")
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            store._evalsha(hashlib.sha1(wrong.encode()).hexdigest(), wrong, ["a-hash"], [])
        assert store._evalsha(ECHO_SHA, ECHO, [], ["after"])[0] == "after"
        with pytest.raises(redis.DataError):
            store._evalsha(ECHO_SHA, ECHO, [], [object()])  # type: ignore[list-item]
        assert store._evalsha(ECHO_SHA, ECHO, [], ["still"])[0] == "still"
    # All of it on one connection (none dropped it): two for each script unknown to the
    # server (NOSCRIPT, then sent again), one for each echo.
    assert [n for n in proxy.evalshas if n] == [6]


def test_a_script_flushed_from_the_server_is_loaded_again(proxy: CuttingProxy) -> None:
    with connect(proxy.url) as store:
        store.client.script_flush()
        assert store._evalsha(ECHO_SHA, ECHO, [], ["one"])[0] == "one"
        store.client.script_flush()
        assert store._evalsha(ECHO_SHA, ECHO, [], ["two"])[0] == "two"
    # Each call: refused (NOSCRIPT), the script loaded, sent again on the kept connection.
    assert [n for n in proxy.evalshas if n] == [4]


def test_a_forked_child_writes_on_its_own_connection(proxy: CuttingProxy) -> None:
    with connect(proxy.url) as store:
        store.start_episode(EpisodeLog(pk="parent"))
        (parents,) = (index for index, n in enumerate(proxy.evalshas) if n)
        before = proxy.evalshas[parents]
        pid = os.fork()
        if pid == 0:  # the child: write, then leave at once (no cleanup of the parent's)
            status = 1
            try:
                store.start_episode(EpisodeLog(pk="child"))
                store.append_call("child", {"by": "child"})
                status = 0 if store.read_calls("child") == [{"by": "child"}] else 2
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        # The child sent nothing on its parent's connection, which is still open and
        # carries the parent's next write.
        assert proxy.evalshas[parents] == before
        store.append_call("parent", {"by": "parent"})
        assert proxy.evalshas[parents] > before
        assert store.read_calls("parent") == [{"by": "parent"}]
        assert store.get_episode("child").status is EpisodeStatus.RUNNING
    childs = [n for index, n in enumerate(proxy.evalshas) if n and index != parents]
    assert len(childs) == 1


def test_a_child_forked_while_a_thread_holds_the_connection_is_not_stuck(
    store: EpisodeStore,
) -> None:
    """A fork while another thread of the parent is in a script call (holding the
    connection's lock, which the child inherits held and nobody will release there)."""
    store.start_episode(EpisodeLog(pk="parent"))
    with store._scripts._lock:  # as a thread in the middle of a call
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                store.append_call("parent", {"by": "child"})
                store.close()
                status = 0
            finally:
                os._exit(status)
        deadline = time.monotonic() + 30
        while (waited := os.waitpid(pid, os.WNOHANG)) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the child is stuck on its parent's lock")
            time.sleep(0.05)
    assert os.waitstatus_to_exitcode(waited[1]) == 0
    assert store.read_calls("parent") == [{"by": "child"}]


def test_threads_sharing_the_store_each_get_their_own_reply(store: EpisodeStore) -> None:
    load_echo(store)
    wrong: list[Any] = []

    def echo(name: str) -> None:
        for n in range(200):
            said = f"{name}-{n}"
            reply = store._evalsha(ECHO_SHA, ECHO, [], [said])
            if reply[0] != said:
                wrong.append((said, reply[0]))

    threads = [threading.Thread(target=echo, args=(f"t{k}",)) for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_a_connection_the_server_closed_while_idle_is_made_anew_before_sending(
    store: EpisodeStore,
) -> None:
    """The server closing idle connections (its ``timeout``, ``CLIENT KILL``, a restart)
    between two writes costs the next write nothing: it sees the closed connection
    before sending and connects again (a script sent on it could not be retried:
    whether it ran would be unknown)."""
    store.start_episode(EpisodeLog(pk="idle"))
    with redis.Redis.from_url(store.url or "", decode_responses=True) as other:
        assert other.client_kill_filter(_type="normal", skipme=True) >= 1
    store.append_call("idle", {"n": 1})
    assert store.read_calls("idle") == [{"n": 1}]
