"""A minimal HTTP/1.1 client for one kind of exchange: POST a body, read the answer.

What the HTTP transport needs of a client is narrow: keep-alive connections to one server,
one request at a time on each, a body framed by ``Content-Length``, chunks or the end of
the connection, gzip or deflate inflated with a bound. aiohttp does all of that and much
more, at about 0.4 ms of CPU per request; a batch against a fast server makes hundreds of
requests a second, so this module does just that, on an :class:`asyncio.Protocol`, in
about a tenth of the time. Proxies are not its business: the transport sends through
aiohttp when the environment names one (:mod:`~sotopia_are.llm.http_pools`).

A reply is a :class:`WireReply` (status, reason, headers with lower-case names, the
inflated body or None past the cap). Failures are ``OSError`` (the connection could not be
made or was lost: ``ConnectionError``), :class:`WireProtocolError` (the server's bytes are
no HTTP answer) or the caller's timeout cancelling the read.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import urllib.parse
import zlib
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import cast

from sotopia_are import SotopiaAreError

__all__ = ["WirePool", "WireProtocolError", "WireReply", "inflate_capped"]

IDLE_S = 4.0
"""How long an idle connection is kept: below the 5 s idle timeout of uvicorn (vLLM,
SGLang), so a connection the server is about to close is not reused."""
_MAX_HEAD = 64 * 1024
"""The most bytes a status line and headers may take."""
_INFLATE_STEP = 1 << 16


class WireProtocolError(SotopiaAreError, ConnectionError):
    """The server's bytes are not an HTTP/1.x answer (the transport reports it as an
    :class:`~sotopia_are.llm.http_errors.APIConnectionError`)."""


@dataclass(frozen=True)
class WireReply:
    """A server's answer: ``body`` is inflated, or None once it grew past the cap."""

    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes | None


def inflate_capped(body: bytes, encoding: str, cap: int) -> bytes | None:
    """``body`` inflated per its ``Content-Encoding`` (gzip or deflate; anything else is
    taken as it is), or None once the result grows past ``cap`` bytes. The inflater is
    fed a bounded step at a time: 64 KB of a gzip bomb is 64 MB of text."""
    if encoding.strip().lower() not in ("gzip", "x-gzip", "deflate"):
        return body if len(body) <= cap else None
    decoder = zlib.decompressobj(32 + zlib.MAX_WBITS)  # a gzip or a zlib header
    parts: list[bytes] = []
    size = 0
    pending = body
    try:
        while pending:
            piece = decoder.decompress(pending, _INFLATE_STEP)
            pending = decoder.unconsumed_tail
            size += len(piece)
            if size > cap:
                return None
            parts.append(piece)
            if not piece and pending:
                break  # no progress: the stream ended before the data did
        rest = decoder.flush()
    except zlib.error as error:
        raise WireProtocolError(f"a {encoding} body that does not inflate: {error}") from None
    if size + len(rest) > cap:
        return None
    parts.append(rest)
    return b"".join(parts)


class WirePool:
    """Keep-alive connections to the server of ``url`` (one origin), for one event loop.

    :meth:`post` sends on an idle connection if one is fresh, else opens one; a reused
    connection the server closed meanwhile (nothing read back) is retried once on a new
    one, as every keep-alive client must. Cancelling :meth:`post` (a timeout) closes its
    connection: a half-read answer can never be taken for the next one's.
    """

    def __init__(self, url: str, *, user_agent: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.secure = parts.scheme.lower() == "https"
        if parts.hostname is None:
            raise ValueError(f"{url!r} names no host")
        self.host = parts.hostname
        self.port = parts.port or (443 if self.secure else 80)
        default_port = self.port == (443 if self.secure else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        authority = host if default_port else f"{host}:{self.port}"
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        self._head = (
            f"POST {target} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: {user_agent}\r\n"
        ).encode("ascii")
        self._idle: list[tuple[float, _Connection]] = []
        self._ssl: ssl.SSLContext | None = ssl.create_default_context() if self.secure else None
        self.closed = False

    async def post(self, body: bytes, headers: Mapping[str, str], cap: int) -> WireReply:
        """Send ``body`` with ``headers`` and read the answer (its body cut off past
        ``cap`` bytes, compressed or inflated)."""
        return WireReply(*await self.exchange(self.request_head(headers), body, cap))

    async def get(self, headers: Mapping[str, str], cap: int) -> WireReply:
        """``GET`` the pool's URL with ``headers`` (no body) and read the answer, as
        :meth:`post`."""
        head = b"GET " + self.request_head(headers).removeprefix(b"POST ")
        return WireReply(*await self._send(head + b"\r\n", cap))

    def request_head(self, headers: Mapping[str, str]) -> bytes:
        """The request's line and ``headers`` as :meth:`exchange` sends them: made once
        for headers sent with many bodies. A ``ValueError`` for a header holding a line
        break or a colon in its name."""
        lines = [self._head]
        for name, value in headers.items():
            if name.lower() in ("content-length", "host"):
                continue  # each request's own, written by exchange
            if any(c in name or c in value for c in "\r\n\0") or ":" in name:
                raise ValueError(f"the header {name!r} holds a line break or a colon")
            lines.append(f"{name}: {value}\r\n".encode("latin-1"))
        return b"".join(lines)

    def exchange(
        self, head: bytes, body: bytes, cap: int
    ) -> Coroutine[None, None, tuple[int, str, dict[str, str], bytes | None]]:
        """:meth:`post` of ``body`` with the :meth:`request_head` ``head``, to await: the
        answer's status, reason, headers and body (None past ``cap``), as
        :class:`WireReply` holds them. (The sending coroutine itself: no coroutine of its
        own between, one frame less on each request's way out and back.)"""
        return self._send(b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body), cap)

    async def _send(
        self, request: bytes, cap: int
    ) -> tuple[int, str, dict[str, str], bytes | None]:
        """Send the bytes of ``request`` on a connection and read the answer, as
        :meth:`exchange` says."""
        while True:
            connection = self._reusable()
            reused = connection is not None
            if connection is None:
                connection = await self._connect()
            try:
                answer_head, body_bytes = await connection.send(request, cap)
            except _StaleConnection:
                if reused:
                    continue
                raise ConnectionResetError("the server closed the connection") from None
            except BaseException:
                connection.close()
                raise
            finally:
                connection.finish()
            status, reason, answer_headers, keep = answer_head
            if keep and not connection.closed:
                self._idle.append((time.monotonic(), connection))
            else:
                connection.close()
            if body_bytes is None:
                return status, reason, answer_headers, None
            encoding = answer_headers.get("content-encoding")
            if encoding is None and len(body_bytes) <= cap:
                return status, reason, answer_headers, body_bytes  # as inflate_capped gives it
            return status, reason, answer_headers, inflate_capped(body_bytes, encoding or "", cap)

    def close(self) -> None:
        """Close every idle connection; the pool takes no more requests."""
        self.closed = True
        idle, self._idle = self._idle, []
        for _since, connection in idle:
            connection.close()

    def _reusable(self) -> _Connection | None:
        """A fresh idle connection, if there is one (the stale ones are closed)."""
        now = time.monotonic()
        while self._idle:
            since, connection = self._idle.pop()
            if not connection.closed and now - since < IDLE_S:
                return connection
            connection.close()
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        _transport, connection = await loop.create_connection(
            _Connection,
            self.host,
            self.port,
            ssl=self._ssl,
            server_hostname=self.host if self.secure else None,
        )
        return connection


Head = tuple[int, str, dict[str, str], bool]
"""Status, reason, headers (lower-case names) and whether the connection stays open."""


_ParsedHead = tuple[int, str, dict[str, str], bool, bool, int | None]
"""A :data:`Head` and how its body is framed: chunked, and its ``Content-Length`` (None:
none, or chunked)."""

_HEADS: dict[bytes, _ParsedHead] = {}
"""Answers' heads parsed, by their bytes: a server sends the same few heads (its
``Content-Length`` and ``Date`` aside), so most are parsed once (a head's parse is a
function of its bytes alone)."""
_KEPT_HEADS = 256


def _parsed_head(text: bytes) -> _ParsedHead | None:
    """The answer's head ``text`` (its status line and headers, without the blank line)
    read, or None for an interim answer (``1xx``): a :class:`WireProtocolError` for what
    is no HTTP/1.x head."""
    lines = text.decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ", 2)
    if len(status_line) < 2 or not status_line[0].startswith("HTTP/1."):
        raise WireProtocolError(f"no HTTP status line: {lines[0][:80]!r}")
    try:
        status = int(status_line[1])
    except ValueError:
        raise WireProtocolError(f"no HTTP status line: {lines[0][:80]!r}") from None
    reason = status_line[2] if len(status_line) > 2 else ""
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise WireProtocolError(f"a header line without a colon: {line[:80]!r}")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if 100 <= status < 200:
        return None
    connection = headers.get("connection", "").lower()
    keep = "close" not in connection and (
        status_line[0] != "HTTP/1.0" or "keep-alive" in connection
    )
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    length = None
    if not chunked and "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise WireProtocolError("a Content-Length that is no number") from None
        if length < 0:
            raise WireProtocolError("a negative Content-Length")
    elif not chunked:
        keep = False  # the body runs to the end of the connection
    return status, reason, headers, keep, chunked, length


class _StaleConnection(WireProtocolError):
    """A reused connection closed before any byte of the answer came."""


class _Connection(asyncio.Protocol):
    """One connection: one exchange at a time, the answer parsed as it arrives."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        # What arrived of the answer: the bytes of the first read as they are (an answer
        # is most often one read: no copy), a bytearray once more are added.
        self._buffer: bytes | bytearray = b""
        self._waiter: asyncio.Future[tuple[Head, bytes | None]] | None = None
        self._cap = 0
        self._head: Head | None = None
        self._body_start = 0
        self._length: int | None = None  # Content-Length, or None
        self._chunked = False
        self._chunks: list[bytes] = []
        self._chunk_at = 0  # where the next chunk's size line starts
        self._received = False

    # -- asyncio.Protocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports have the methods of asyncio.Transport, not the class.
        self.transport = cast(asyncio.Transport, transport)
        self._loop = asyncio.get_running_loop()

    def data_received(self, data: bytes) -> None:
        self._received = True
        buffer = self._buffer
        if not buffer:
            self._buffer = data
        elif type(buffer) is bytearray:
            buffer += data
        else:
            self._buffer = buffer = bytearray(buffer)
            buffer += data
        if self._waiter is None or self._waiter.done():
            self.close()  # bytes nobody asked for: the connection can no longer be trusted
            return
        try:
            self._advance(eof=False)
        except WireProtocolError as error:
            self._fail(error)

    def eof_received(self) -> bool:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if not self._received:
            waiter.set_exception(_StaleConnection())
            return
        try:
            if not self._advance(eof=True):
                raise ConnectionResetError(
                    "the server closed the connection before the answer ended"
                ) from exc
        except (WireProtocolError, ConnectionResetError) as error:
            self._fail(error)

    # -- an exchange --------------------------------------------------------------------

    def send(self, request: bytes, cap: int) -> asyncio.Future[tuple[Head, bytes | None]]:
        """Write ``request``: the future of the answer's head and raw body (None once past
        ``cap``). Call :meth:`finish` once it is done (or abandoned)."""
        assert self.transport is not None and self._waiter is None
        # The loop's future, made without the loop's create_future (a layer in Python).
        waiter = self._waiter = asyncio.Future(loop=self._loop)
        self._cap = cap
        self._buffer = b""
        self._received = False
        self.transport.write(request)
        return waiter

    def finish(self) -> None:
        """The exchange :meth:`send` began is over: ready for the next."""
        self._waiter = None
        self._head = None
        if self._chunks:
            self._chunks = []

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _fail(self, error: BaseException) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(error)
        self.close()

    def _advance(self, *, eof: bool) -> bool:
        """Parse what has arrived; resolve the waiter once the answer is whole. Whether
        it is."""
        assert self._waiter is not None
        if self._head is None and not self._read_head():
            if eof:
                raise WireProtocolError("the connection ended inside the answer's headers")
            return False
        assert self._head is not None
        buffer, start = self._buffer, self._body_start
        if self._chunked:
            body = self._read_chunks()
            consumed = self._chunk_at
        elif self._length is not None:
            consumed = start + self._length
            body = bytes(buffer[start:consumed]) if len(buffer) >= consumed else None
        else:
            body = bytes(buffer[start:]) if eof else None
            consumed = len(buffer)
        if body is None or len(body) > self._cap:
            if len(buffer) - start > self._cap:
                self._done(None, False)  # what is left of it is not read
                return True
            return False
        self._done(body, self._head[3] and len(buffer) == consumed)
        return True

    def _done(self, body: bytes | None, keep: bool) -> None:
        assert self._waiter is not None and self._head is not None
        status, reason, headers, _keep = self._head
        self._waiter.set_result(((status, reason, headers, keep), body))
        if not keep:
            self.close()

    def _read_head(self) -> bool:
        buffer = self._buffer
        end = buffer.find(b"\r\n\r\n")
        if end > _MAX_HEAD or (end < 0 and len(buffer) > _MAX_HEAD):
            raise WireProtocolError(f"headers over {_MAX_HEAD:,} bytes")
        if end < 0:
            return False
        text = bytes(buffer[:end])
        known = _HEADS.get(text)
        if known is None:
            known = _parsed_head(text)
            if known is None:  # an interim answer (100 Continue): the real one follows
                self._buffer = buffer[end + 4 :]
                return self._read_head()
            if len(_HEADS) >= _KEPT_HEADS:
                _HEADS.clear()
            _HEADS[text] = known
        status, reason, headers, keep, self._chunked, self._length = known
        self._body_start = self._chunk_at = end + 4
        # Each answer its own dict (a caller may change it), not the kept one.
        self._head = (status, reason, headers.copy(), keep)
        return True

    def _read_chunks(self) -> bytes | None:
        """The body once its last chunk (and trailers) arrived, else None."""
        buffer = self._buffer
        while True:
            line_end = buffer.find(b"\r\n", self._chunk_at)
            if line_end < 0:
                return None
            size_text = bytes(buffer[self._chunk_at : line_end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise WireProtocolError(
                    f"a chunk size that is no number: {size_text[:20]!r}"
                ) from None
            if size == 0:
                trailer_end = buffer.find(b"\r\n\r\n", line_end)  # after any trailers
                if trailer_end < 0:
                    return None
                self._chunk_at = trailer_end + 4
                return b"".join(self._chunks)
            data_end = line_end + 2 + size
            if len(buffer) < data_end + 2:
                return None
            self._chunks.append(bytes(buffer[line_end + 2 : data_end]))
            self._chunk_at = data_end + 2
