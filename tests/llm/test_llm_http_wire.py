"""The lean HTTP/1.1 client (``http_wire``) against real sockets: servers written here
byte by byte answer as well-behaved and badly-behaved servers do (framing by length,
chunks or the end of the connection, gzip, keep-alive dropped, garbage, a hang), and the
answer arrives split at arbitrary points."""

import asyncio
import gzip
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sotopia_are.llm.http_wire import WirePool, WireProtocolError, inflate_capped

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

BODY = json.dumps({"choices": [{"message": {"role": "assistant", "content": "hé"}}]}).encode()


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """The head and body of one request (framed by its Content-Length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head, await reader.readexactly(length)


def answer(body: bytes, *, extra: bytes = b"", status: bytes = b"200 OK") -> bytes:
    return (
        b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n" + extra
        + b"Content-Length: %d\r\n\r\n" % len(body) + body
    )  # fmt: skip


def answering(replies: list[bytes], *, linger_s: float = 0.0) -> Handler:
    """A server that answers each connection's one request with the next of ``replies``,
    waits ``linger_s``, then closes the connection."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(replies.pop(0))
        await writer.drain()
        await asyncio.sleep(linger_s)
        writer.close()

    return handler


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[str]]]:
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> str:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1/chat/completions"

    yield start
    for server in servers:
        server.close()


async def test_keep_alive_reuses_one_connection_and_sends_the_request_as_given(
    serve: Callable[[Handler], Awaitable[str]],
) -> None:
    connections = 0
    seen: list[tuple[bytes, bytes]] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while not reader.at_eof():
            try:
                seen.append(await read_request(reader))
            except asyncio.IncompleteReadError:
                break
            writer.write(answer(BODY))
            await writer.drain()

    pool = WirePool(await serve(handler), user_agent="sotopia-are")
    for n in range(3):
        reply = await pool.post(b'{"n": %d}' % n, {"Authorization": "Bearer k"}, 10_000)
        assert (reply.status, reply.reason, reply.body) == (200, "OK", BODY)
        assert reply.headers["content-type"] == "application/json"
    pool.close()
    assert connections == 1
    head, body = seen[2]
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nAuthorization: Bearer k\r\n" in head and b"User-Agent: sotopia-are" in head
    assert body == b'{"n": 2}'


async def test_a_get_carries_no_body_and_reuses_the_connection(
    serve: Callable[[Handler], Awaitable[str]],
) -> None:
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while not reader.at_eof():
            try:
                head, body = await read_request(reader)
            except asyncio.IncompleteReadError:
                break
            seen.append(head + body)
            writer.write(answer(BODY))
            await writer.drain()

    url = (await serve(handler)).removesuffix("/v1/chat/completions") + "/props"
    pool = WirePool(url, user_agent="sotopia-are")
    for _ in range(2):
        reply = await pool.get({"Authorization": "Bearer k"}, 10_000)
        assert (reply.status, reply.body) == (200, BODY)
    pool.close()
    assert len(seen) == 2
    assert seen[1].startswith(b"GET /props HTTP/1.1\r\nHost: 127.0.0.1:")
    assert seen[1].endswith(b"\r\nAuthorization: Bearer k\r\n\r\n")  # no length, no body
    assert b"content-length" not in seen[1].lower()


async def test_the_same_head_again_reads_the_same_into_a_dict_of_its_own(
    serve: Callable[[Handler], Awaitable[str]],
) -> None:
    """Heads are parsed once by their bytes: each answer still gets its own headers, and
    a head refused is refused every time it comes."""
    replies = [answer(BODY, extra=b"X-Twice: a\r\nx-twice:  b \r\n")] * 3 + [
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"
    ] * 2

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while replies and not reader.at_eof():
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                break
            writer.write(replies.pop(0))
            await writer.drain()

    pool = WirePool(await serve(handler), user_agent="t")
    first = await pool.post(b"{}", {}, 10_000)
    assert first.headers == {
        "content-type": "application/json",
        "x-twice": "a, b",
        "content-length": str(len(BODY)),
    }
    first.headers["x-twice"] = "changed"  # type: ignore[index]
    for _ in range(2):
        again = await pool.post(b"{}", {}, 10_000)
        assert again.headers["x-twice"] == "a, b"
        assert again.headers is not first.headers
    for _ in range(2):
        with pytest.raises(WireProtocolError, match="a header line without a colon"):
            await pool.post(b"{}", {}, 10_000)
    pool.close()


async def test_chunked_gzip_and_close_delimited_bodies_are_read_whole(
    serve: Callable[[Handler], Awaitable[str]],
) -> None:
    packed = gzip.compress(BODY)
    replies = [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in (BODY[:7], BODY[7:]))
        + b"0\r\nX-Trailer: yes\r\n\r\n",
        answer(packed, extra=b"Content-Encoding: gzip\r\n"),
        b"HTTP/1.0 200 OK\r\n\r\n" + BODY,  # no length: the body ends with the connection
    ]

    pool = WirePool(await serve(answering(replies)), user_agent="t")
    for _ in range(3):
        assert (await pool.post(b"{}", {}, 10_000)).body == BODY
    pool.close()


async def test_a_connection_the_server_dropped_while_idle_is_replaced_not_reported(
    serve: Callable[[Handler], Awaitable[str]],
) -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await read_request(reader)
        writer.write(answer(BODY))  # says nothing of closing, then closes
        await writer.drain()
        writer.close()

    pool = WirePool(await serve(handler), user_agent="t")
    assert (await pool.post(b"{}", {}, 10_000)).body == BODY
    await asyncio.sleep(0.05)  # the close reaches the idle connection
    assert (await pool.post(b"{}", {}, 10_000)).body == BODY
    pool.close()
    assert connections == 2


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (b"SSH-2.0-OpenSSH_9.2\r\n\r\n", "no HTTP status line"),
        (b"HTTP/1.1 abc OK\r\n\r\n", "no HTTP status line"),
        (b"HTTP/1.1 200 OK\r\nbroken header\r\n\r\n", "without a colon"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", "no number"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "before the answer ended"),
        (b"HTTP/1.1 200 OK\r\nContent-Len", "inside the answer's headers"),
        (answer(b"not gzip", extra=b"Content-Encoding: gzip\r\n"), "does not inflate"),
    ],
)
async def test_garbage_or_a_cut_answer_is_a_connection_error_naming_it(
    reply: bytes, words: str, serve: Callable[[Handler], Awaitable[str]]
) -> None:
    pool = WirePool(await serve(answering([reply])), user_agent="t")
    with pytest.raises(ConnectionError, match=words):
        await pool.post(b"{}", {}, 10_000)
    pool.close()


async def test_headers_past_their_bound_and_bodies_past_the_cap(
    serve: Callable[[Handler], Awaitable[str]],
) -> None:
    replies = [
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n",
        answer(b"x" * 5_000),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1000\r\n" + b"y" * 4096,
        answer(gzip.compress(b"z" * 50_000), extra=b"Content-Encoding: gzip\r\n"),
    ]

    # The server lingers: the client must stop at the cap, not wait for the rest.
    pool = WirePool(await serve(answering(replies, linger_s=1)), user_agent="t")
    with pytest.raises(WireProtocolError, match="headers over"):
        await pool.post(b"{}", {}, 1_000)
    for _ in range(3):
        reply = await asyncio.wait_for(pool.post(b"{}", {}, 1_000), 0.5)
        assert reply.status == 200 and reply.body is None
    pool.close()


async def test_a_cancelled_exchange_closes_its_connection(
    serve: Callable[[Handler], Awaitable[str]],
) -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await read_request(reader)
        if connections == 1:
            await asyncio.sleep(0.3)  # too late: the client gave up
        writer.write(answer(BODY))
        await writer.drain()

    pool = WirePool(await serve(handler), user_agent="t")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(pool.post(b"{}", {}, 10_000), 0.1)
    # The late answer must never be read as the next request's.
    assert (await pool.post(b'{"again": 1}', {}, 10_000)).body == BODY
    pool.close()
    assert connections == 2


def test_a_header_cannot_smuggle_a_line() -> None:
    pool = WirePool("http://127.0.0.1:9/v1/chat/completions", user_agent="t")
    with pytest.raises(ValueError, match="line break"):
        asyncio.run(pool.post(b"{}", {"X-Note": "a\r\nHost: evil"}, 100))


def test_an_unreachable_server_is_an_os_error() -> None:
    pool = WirePool("http://127.0.0.1:9/v1/chat/completions", user_agent="t")
    with pytest.raises(OSError):
        asyncio.run(pool.post(b"{}", {}, 100))


def test_inflate_is_bounded_and_passes_plain_bodies() -> None:
    assert inflate_capped(b"plain", "", 10) == b"plain"
    assert inflate_capped(b"plain", "", 3) is None
    bomb = gzip.compress(b"\0" * 10_000_000)
    assert len(bomb) < 20_000 and inflate_capped(bomb, "gzip", 1_000_000) is None
    assert inflate_capped(gzip.compress(b"ok"), "GZIP", 10) == b"ok"


RESPONSES = [
    answer(BODY, extra=b"X-Request-Id: 7\r\n"),
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (BODY[:3], BODY[3:20], BODY[20:]))
    + b"0\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\n" + answer(BODY),
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.sampled_from(range(len(RESPONSES))),
    cuts=st.lists(st.integers(min_value=1, max_value=len(RESPONSES[1]) - 1), max_size=6),
)
def test_an_answer_split_anywhere_reads_the_same(which: int, cuts: list[int]) -> None:
    """However the network splits the answer, the body read is the body sent."""
    response = RESPONSES[which]
    points = sorted({c for c in cuts if c < len(response)})
    pieces = [response[a:b] for a, b in zip([0, *points], [*points, len(response)], strict=True)]

    async def main() -> bytes | None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
            for piece in pieces:
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(0)
            await reader.read()  # keep the connection open: the client must not wait for EOF

        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = WirePool(f"http://127.0.0.1:{port}/v1/chat/completions", user_agent="t")
        try:
            return (await asyncio.wait_for(pool.post(b"{}", {}, 10_000), 5)).body
        finally:
            pool.close()
            server.close()

    assert asyncio.run(main()) == BODY


async def test_a_server_behind_a_proxy_is_reached_through_it(
    serve: Callable[[Handler], Awaitable[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY sends the transport through aiohttp, which asks the proxy for the
    server's absolute URL (the lean client speaks only to the server itself); the
    question for the server's slots goes the same way."""
    from sotopia_are.llm import LLMConfig, LLMSession, PromptLibrary, RetryPolicy

    asked: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _body = await read_request(reader)
        asked.append(head.split(b"\r\n", 1)[0])
        writer.write(answer(BODY))
        await writer.drain()

    proxy_url = (await serve(proxy)).removesuffix("/v1/chat/completions")
    monkeypatch.setenv("HTTP_PROXY", proxy_url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    config = LLMConfig(
        api_base="http://llm.invalid:8000/v1", api_key="k", retry=RetryPolicy(max_attempts=1)
    )
    prompts = Path(__file__).parent / "prompts"
    session = LLMSession(config, prompts=PromptLibrary(prompts))
    call = await session.generate("openai/m", "test/plain.j2", {"word": "x"})
    assert call.value == "hé"
    assert asked == [
        b"GET http://llm.invalid:8000/props HTTP/1.1",
        b"POST http://llm.invalid:8000/v1/chat/completions HTTP/1.1",
    ]
