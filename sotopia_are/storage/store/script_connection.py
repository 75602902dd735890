"""`ScriptConnection`: the connection the store's script calls (EVALSHA) keep.

A batch worker writes an episode in a few EVALSHA round trips. Through redis-py each
took a connection from the client's pool and gave it back (the pool's fork check, its
observability hooks and event dispatch, a deprecation wrapper), packed its arguments in
a Python loop around hiredis and read the reply through two layers of parser: about as
much client work as the round trip's own. This connection is made as the pool makes its
own (same address, credentials, TLS, database, timeouts and retry settings; redis-py's
handshake) and kept: the command is packed by hiredis in one call and the reply read by
a hiredis reader straight from the socket.

Errors are redis-py's: a lost connection or a timeout is its ``ConnectionError`` or
``TimeoutError`` once the connection's retry settings are spent (the connection closed
after each failure, as redis-py closes it), an error reply the ``ResponseError``
subclass redis-py makes of it (``NoScriptError``, ``ReadOnlyError``...), and a reply
redis-py raises as a connection error (``LOADING``, too many clients) is one here too.

A connection the server closed while it was idle (its ``timeout``, ``CLIENT KILL``, a
restart) is seen before a command is sent (the socket is readable between replies) and
made anew, as the pool's ``get_connection`` does: a script sent on it could not be
retried without doubt about whether it ran.

Safe across threads (one call at a time on the connection) and across ``fork``: a
child never touches its parent's socket (it makes its own on first use), so parent
and child both keep writing on their own connections.
"""

from __future__ import annotations

import os
import select
import socket
import threading
from collections.abc import Sequence
from typing import Any

import hiredis
import redis
from redis.exceptions import InvalidResponse

__all__ = ["ScriptConnection"]

_READ_SIZE = 65536
"""How much one read of the socket takes (redis-py's own read size)."""

_CLOSED = "Connection closed by server."
"""redis-py's message for a connection the server closed."""

_PENDING = object()
"""What the reader gives while the reply is incomplete (a RESP3 reply may be False)."""


class ScriptConnection:
    """One connection of the client's pool's kind, kept for EVALSHA calls.

    ``pool`` is the client's ``ConnectionPool`` (its connection class and settings are
    used; no connection is taken from it). Connects on first use; :meth:`close` closes
    the connection (a later call connects again).
    """

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._conn: Any = None  # the redis-py connection (for its handshake and retry)
        self._sock: socket.socket | None = None  # set while connected
        self._reader: Any = None  # the hiredis reader of the socket's replies
        self._poll: Any = None  # the socket's readability, asked before each command

    def evalsha(self, sha: str, keys: Sequence[str], args: Sequence[str | bytes]) -> Any:
        """The reply of ``EVALSHA sha`` with ``keys`` and ``args``; redis-py's errors
        (see the module), ``DataError`` for an argument that is no text, bytes or number."""
        if self._pid != os.getpid():
            self._forked()
        try:
            packed = hiredis.pack_command(("EVALSHA", sha, len(keys), *keys, *args))  # type: ignore[arg-type]
        except TypeError as error:  # as redis-py's hiredis packer says it
            raise redis.DataError(error) from error
        with self._lock:
            conn = self._conn
            if conn is None:
                conn = self._conn = self._pool.connection_class(**self._pool.connection_kwargs)
            return conn.retry.call_with_retry(lambda: self._round_trip(packed), self._drop)

    def close(self) -> None:
        """Close the connection (if open)."""
        if self._pid != os.getpid():  # the parent's lock may be held for good here
            self._forked()
        with self._lock:
            self._drop()

    def _round_trip(self, packed: bytes) -> Any:
        sock = self._sock or self._connect()
        if self._poll.poll(0):
            # Readable between replies: the server closed it while it was idle (its
            # timeout, CLIENT KILL, a restart). Connect again before sending, as the pool
            # does: a script sent on it would fail with no telling whether it ran.
            self._drop()
            sock = self._connect()
        reader = self._reader
        try:
            sock.sendall(packed)
            reply = reader.gets()
            while reply is _PENDING:
                data = sock.recv(_READ_SIZE)
                if not data:
                    raise redis.ConnectionError(_CLOSED)
                reader.feed(data)
                reply = reader.gets()
        except TimeoutError as error:  # socket.timeout
            self._drop()
            raise redis.TimeoutError(f"Timeout talking to the server: {error}") from error
        except OSError as error:
            self._drop()
            raise redis.ConnectionError(f"Error talking to the server: {error}") from error
        except BaseException:  # a reply half read (an interrupt): never reuse the stream
            self._drop()
            raise
        # As redis-py's parser and connection: an error reply is raised, and one that is
        # a connection error (LOADING, too many clients) first, or at an array's head,
        # drops the connection.
        raised: redis.RedisError
        if isinstance(reply, redis.RedisError):
            raised = reply
        elif type(reply) is list and reply and isinstance(reply[0], redis.ConnectionError):
            raised = reply[0]
        else:
            return reply
        if isinstance(raised, redis.ConnectionError):
            self._drop()
        raise raised

    def _connect(self) -> socket.socket:
        conn = self._conn
        conn.connect()  # redis-py's handshake: AUTH, HELLO, SELECT, CLIENT SETINFO
        encoder = conn.encoder
        self._reader = hiredis.Reader(
            protocolError=InvalidResponse,
            replyError=conn._parser.parse_error,  # the exception classes redis-py uses
            encoding=encoder.encoding if encoder.decode_responses else None,
            errors=encoder.encoding_errors,
            notEnoughData=_PENDING,
        )
        sock: socket.socket = conn._sock
        self._poll = select.poll()
        self._poll.register(sock, select.POLLIN)
        self._sock = sock
        return sock

    def _drop(self, _error: BaseException | None = None) -> None:
        """Close the connection (the retry's failure handler): the next call connects
        anew."""
        self._sock = None
        self._reader = None
        self._poll = None
        if self._conn is not None:
            self._conn.disconnect()

    def _forked(self) -> None:
        """In a child process: forget the parent's connection without shutting its
        socket down (redis-py closes only the child's descriptor of it) and the lock
        another thread of the parent may have held."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._drop()
        self._conn = None
