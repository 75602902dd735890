"""A local OpenAI-compatible chat-completions server for tests, examples and benchmarks.

It runs a small HTTP/1.1 keep-alive server on its own asyncio loop in a daemon thread, so
both synchronous code and async tests (on any event loop) can talk to it, and it sustains
hundreds of concurrent requests. It serves ``POST /v1/chat/completions`` (and
``/chat/completions``), and ``GET /v1/models/<name>`` (OpenAI's "retrieve model"): by
default it plays any model name and lists none (``GET /v1/models`` is a 404); given
``model_ids`` it lists those at ``GET /v1/models`` and plays only those, as vLLM or
llama.cpp do (what the preflight checks, :mod:`sotopia_are.llm.preflight`; chat requests
are answered whatever model they name). Each chat request is answered by the next
queued :class:`Reply` if any, else by the server's rule (default: echo the last message).
Every request received is kept in :attr:`LocalLLMServer.requests`, and the server tracks
how many chat requests were in flight at once (:attr:`LocalLLMServer.max_in_flight`).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from sotopia_are.testing.replies import Reply, ReplyLike, Rule, echo_rule

__all__ = ["LocalLLMServer", "ReceivedRequest"]

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    404: "model_not_found",
    429: "rate_limit_exceeded",
}
_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_MODELS_PATHS = frozenset({"/v1/models", "/models"})
_MODEL_PREFIXES = ("/v1/models/", "/models/")


@dataclass(frozen=True)
class ReceivedRequest:
    """One HTTP request as the server saw it; ``received_at`` is ``time.monotonic()``."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    received_at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of the request (empty for non-chat requests)."""
        return list(self.body.get("messages", []))


class LocalLLMServer:
    """An OpenAI-compatible server on 127.0.0.1 with scripted replies.

    Use it as a context manager (``with LocalLLMServer() as server: ...``) or call
    :meth:`start` / :meth:`stop`. Point litellm at it with ``model="openai/<anything>"`` and
    ``api_base=server.url`` (any API key). ``latency`` is added before every reply.

    ``model_ids``: the models it lists (default: none listed, any name played).
    ``api_key``: the one key it takes (``Authorization: Bearer <key>``); any other gets a
    401 on every route, as a hosted provider answers a wrong key (default: any key).

    ``slots`` makes it behave like a local model server (llama.cpp, Ollama): at most that
    many chat requests are worked on at once (each for ``latency`` plus its reply's
    delay), the others wait in a first-come queue, and each answer reports the time
    spent on it in llama.cpp's ``timings`` (``prompt_ms`` + ``predicted_ms``); ``GET
    /props`` then says how many, as llama.cpp's ``total_slots``. While a
    request is held by a hanging reply the whole server is wedged: ``GET /models`` hangs
    too, as a stuck server's would.
    """

    def __init__(
        self,
        rule: Rule | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        model_ids: tuple[str, ...] | None = None,
        slots: int | None = None,
        api_key: str | None = None,
    ) -> None:
        self.api_key = api_key
        self.rule: Rule = rule or echo_rule
        self.latency = latency
        self.slots = slots
        self._slots: asyncio.Semaphore | None = None
        self._hanging = 0
        self.model_ids = model_ids
        self._host = host
        self._port = port
        self._queue: collections.deque[ReplyLike] = collections.deque()
        self._requests: list[ReceivedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._closing: asyncio.Event | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> LocalLLMServer:
        """Start serving in a background thread; returns once the port is bound."""
        if self._thread is not None:
            raise RuntimeError("LocalLLMServer is already running")
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._open())
            except BaseException as exc:  # reported to the starting thread, then re-raised
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._close())
            loop.close()

        self._thread = threading.Thread(target=run, name="LocalLLMServer", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]
        return self

    def stop(self) -> None:
        """Stop serving, release hanging requests and close every connection."""
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._thread = None
        self._loop = None

    def serve_forever(self) -> None:
        """Start (unless running) and block until interrupted; then stop."""
        if self._thread is None:
            self.start()
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(0.5)
        finally:
            self.stop()

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- what tests use --------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound TCP port."""
        if self._server is None:
            raise RuntimeError("LocalLLMServer is not running")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (no path)."""
        return f"http://{self._host}:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI-style API base, ``http://127.0.0.1:<port>/v1``: pass it as ``api_base``."""
        return f"{self.base_url}/v1"

    def enqueue(self, *replies: ReplyLike) -> None:
        """Queue replies; queued replies are used, in order, before the rule."""
        self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """How many queued replies have not been used yet."""
        return len(self._queue)

    @property
    def requests(self) -> list[ReceivedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        return list(self._requests)

    @property
    def chat_requests(self) -> list[ReceivedRequest]:
        """The chat-completion requests received so far, in arrival order."""
        return [r for r in self._requests if r.path in _CHAT_PATHS]

    @property
    def in_flight(self) -> int:
        """Chat requests received and not yet answered."""
        return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The largest number of chat requests that were in flight at once."""
        return self._max_in_flight

    def reset_stats(self) -> None:
        """Forget received requests and the in-flight maximum."""
        self._requests.clear()
        self._max_in_flight = self._in_flight

    # -- serving ---------------------------------------------------------------------------

    async def _open(self) -> None:
        self._closing = asyncio.Event()
        self._server = await asyncio.start_server(
            self._handle_connection, self._host, self._port, backlog=4096
        )

    async def _close(self) -> None:
        assert self._closing is not None and self._server is not None
        self._closing.set()
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _handle_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self._writers.add(writer)
        try:
            while await self._handle_one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away; nothing to answer
        except ValueError:
            pass  # not HTTP (bad request line or Content-Length): drop the connection
        except asyncio.CancelledError:
            # Cancelled only by stop(). Ending normally keeps asyncio's start_server callback
            # from logging the cancellation as an unhandled error.
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _handle_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; return whether to keep the connection open."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, target, _version = request_line.split(" ", 2)
        headers = {}
        for line in header_lines:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        raw = await reader.readexactly(length) if length else b""
        path = target.split("?", 1)[0]
        keep_alive = headers.get("connection", "").lower() != "close"
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = None
        self._requests.append(
            ReceivedRequest(method, path, headers, body or {}, received_at=time.monotonic())
        )
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            await self._send_error(writer, 401, "Incorrect API key provided", {}, keep_alive)
        elif body is None or not isinstance(body, dict):
            await self._send_error(writer, 400, "request body is not a JSON object", {}, keep_alive)
        elif method == "GET" and self._hanging:
            await self._hang(reader)  # wedged: it answers nothing else either
            return False
        elif method == "GET" and path in _MODELS_PATHS and self.model_ids is not None:
            data = [_model(name) for name in self.model_ids]
            await self._send(writer, 200, {}, _json({"object": "list", "data": data}), keep_alive)
        elif method == "GET" and path.startswith(_MODEL_PREFIXES) and self._serves(path):
            name = urllib.parse.unquote(path.split("/models/", 1)[1])
            await self._send(writer, 200, {}, _json(_model(name)), keep_alive)
        elif method == "GET" and path == "/props" and self.slots is not None:
            props = {"total_slots": self.slots}
            await self._send(writer, 200, {}, _json(props), keep_alive)
        elif method == "POST" and path in _CHAT_PATHS:
            return await self._chat(reader, writer, body, keep_alive)
        else:
            await self._send_error(writer, 404, f"no route {method} {path}", {}, keep_alive)
        return keep_alive

    async def _chat(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        body: dict[str, Any],
        keep_alive: bool,
    ) -> bool:
        self._in_flight += 1
        self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            reply = self._next_reply(body)
            if reply.hang:
                self._hanging += 1
                try:
                    await self._hang(reader)
                finally:
                    self._hanging -= 1
                return False
            service_s = await self._work(self.latency + reply.delay)
            if body.get("stream"):
                await self._send_error(writer, 400, "streaming is not supported", {}, keep_alive)
            elif reply.body is not None:
                await self._send(writer, reply.status, reply.headers, reply.body, keep_alive)
            elif reply.status != 200:
                await self._send_error(
                    writer, reply.status, reply.error_message, reply.headers, keep_alive
                )
            else:
                payload = self._completion(body, reply)
                if self.slots is not None:
                    payload["timings"] = {"prompt_ms": 0.0, "predicted_ms": service_s * 1000}
                await self._send(writer, 200, reply.headers, _json(payload), keep_alive)
            return keep_alive
        finally:
            self._in_flight -= 1

    async def _work(self, seconds: float) -> float:
        """Spend ``seconds`` on a request, in one of the decoding slots when there are
        slots (waiting for one first); return the time spent on it."""
        if self.slots is None:
            if seconds > 0:
                await asyncio.sleep(seconds)
            return seconds
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.slots)
        async with self._slots:
            started = time.monotonic()
            await asyncio.sleep(seconds)
            return time.monotonic() - started

    def _serves(self, path: str) -> bool:
        """Whether ``GET path`` (``…/models/<name>``) names a model this server plays."""
        name = urllib.parse.unquote(path.split("/models/", 1)[1])
        return bool(name) and (self.model_ids is None or name in self.model_ids)

    def _next_reply(self, body: Mapping[str, Any]) -> Reply:
        try:
            item = self._queue.popleft()
        except IndexError:
            item = self.rule(body)
        return Reply.text(item) if isinstance(item, str) else item

    async def _hang(self, reader: asyncio.StreamReader) -> None:
        """Wait until the client gives up (closes the connection) or the server stops."""
        assert self._closing is not None
        eof = asyncio.ensure_future(reader.read(1))
        closing = asyncio.ensure_future(self._closing.wait())
        _done, pending = await asyncio.wait({eof, closing}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()

    def _completion(self, body: Mapping[str, Any], reply: Reply) -> dict[str, Any]:
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_words
        completion_tokens = (
            reply.completion_tokens
            if reply.completion_tokens is not None
            else len(reply.content.split())
        )
        return {
            "id": f"chatcmpl-local-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or (self.model_ids or ("test-model",))[0],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    async def _send_error(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        message: str,
        headers: Mapping[str, str],
        keep_alive: bool,
    ) -> None:
        error = {
            "message": message,
            "type": _ERROR_TYPES.get(status, "server_error"),
            "code": status,
        }
        await self._send(writer, status, headers, _json({"error": error}), keep_alive)

    @staticmethod
    async def _send(
        writer: asyncio.StreamWriter,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        keep_alive: bool,
    ) -> None:
        lines = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            f"Connection: {'keep-alive' if keep_alive else 'close'}",
            *(f"{k}: {v}" for k, v in headers.items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()


def _model(name: str) -> dict[str, str]:
    return {"id": name, "object": "model", "owned_by": "sotopia_are"}


def _json(payload: Any) -> bytes:
    return json.dumps(payload).encode()
