"""A tiny OpenAI-compatible chat-completions server for the throughput benchmark.

It is deliberately not :mod:`sotopia_are.testing`: it shares no code with the framework
it measures, runs in its own process, and answers like an outside server would. Every
``POST /v1/chat/completions`` is answered after a fixed latency (``--latency``, default
50 ms) with the simplest valid instance of the request's JSON schema
(``response_format.json_schema.schema``): ``"speak"`` where an enum allows it (so
agents talk for every turn), the middle of an integer range (judge ratings), ``"…"``
for text. A request without a schema gets ``{"action_type": "speak", "argument": "…"}``
in its text, which an agent asked in ``prompt`` or ``json_object`` mode accepts.

``GET /stats`` answers the requests served, the most in flight at once, the time-weighted
mean in flight while any was, and the server's own CPU time; ``POST /stats/reset`` zeroes
them.

It is a raw ``asyncio.Protocol`` HTTP/1.1 server with keep-alive (no framework), so that
its own CPU per request stays small next to the client's: on the benchmark's two cores
it shares the machine with the clients it serves.

Run: ``python benchmarks/fake_openai_server.py [--port 0] [--latency 0.05]``; it prints
``serving at http://127.0.0.1:PORT/v1`` once the port is bound, and serves until
SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import signal
import sys
import time
from typing import Any

FALLBACK = json.dumps({"action_type": "speak", "argument": "…"})


def instance(schema: dict[str, Any], definitions: dict[str, Any], path: str = "") -> Any:
    """The simplest value that validates against ``schema`` (see the module); text says
    where it is (``path``), so a judge's reasons differ from one participant to the next."""
    if "$ref" in schema:
        target = definitions[str(schema["$ref"]).rsplit("/", 1)[-1]]
        return instance(target, definitions, path)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return instance(options[0], definitions, path)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        options = list(schema["enum"])
        return "speak" if "speak" in options else options[0]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            name: instance(properties[name], definitions, f"{path}/{name}")
            for name in schema.get("required", list(properties))
        }
    if kind == "array":
        return [instance(schema["items"], definitions, path)] * int(schema.get("minItems", 0))
    if kind == "integer":
        low, high = schema.get("minimum", 0), schema.get("maximum", 10)
        return (low + high) // 2
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return f"… ({path.strip('/')})" if "/" in path.strip("/") else "…"


class Stats:
    """Requests served and in flight (time-weighted)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._area = 0.0  # in-flight x seconds
        self._busy = 0.0  # seconds with any in flight
        self._since = time.monotonic()
        self._cpu = time.process_time()

    def _advance(self) -> None:
        now = time.monotonic()
        if self.in_flight:
            self._area += self.in_flight * (now - self._since)
            self._busy += now - self._since
        self._since = now

    def start(self) -> None:
        self._advance()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def end(self) -> None:
        self._advance()
        self.in_flight -= 1
        self.requests += 1

    def report(self) -> dict[str, float]:
        self._advance()
        return {
            "requests": self.requests,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "mean_in_flight": self._area / self._busy if self._busy else 0.0,
            "busy_s": self._busy,
            "cpu_s": time.process_time() - self._cpu,
        }


class Server:
    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.stats = Stats()
        self.ids = itertools.count(1)
        self._answers: dict[str, str] = {}

    def answer(self, body: dict[str, Any]) -> bytes:
        """The chat completion for ``body``."""
        response_format = body.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("schema")
        if isinstance(schema, dict):
            key = json.dumps(schema, sort_keys=True)
            content = self._answers.get(key)
            if content is None:
                content = json.dumps(instance(schema, schema.get("$defs", {})))
                self._answers[key] = content
        else:
            content = FALLBACK
        prompt = sum(len(str(m.get("content", ""))) // 4 for m in body.get("messages", []))
        completion = len(content) // 4 + 1
        return json.dumps(
            {
                "id": f"chatcmpl-{next(self.ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "bench"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
        ).encode()


def response(status: int, body: bytes, keep_alive: bool) -> bytes:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "Status")
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    return head.encode("latin-1") + body


class Connection(asyncio.Protocol):
    """One client connection: requests parsed as they arrive, answered after the latency
    (several may wait at once, answered in order of arrival: HTTP/1.1 pipelining)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()
        self.pending = 0
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).decode("latin-1")
            request_line, *lines = head.split("\r\n")
            headers = {}
            for line in lines:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            if len(self.buffer) < end + 4 + length:
                return
            raw = bytes(self.buffer[end + 4 : end + 4 + length])
            del self.buffer[: end + 4 + length]
            keep_alive = headers.get("connection", "").lower() != "close"
            self.handle(request_line, raw, keep_alive)

    def handle(self, request_line: str, raw: bytes, keep_alive: bool) -> None:
        method, target, _ = request_line.split(" ", 2)
        path = target.split("?", 1)[0]
        if method == "POST" and path.endswith("/chat/completions"):
            try:
                body = json.loads(raw)
            except ValueError:
                self.send(response(400, b'{"error": {"message": "not JSON"}}', keep_alive))
                return
            reply = response(200, self.server.answer(body), keep_alive)
            self.server.stats.start()
            self.loop.call_later(self.server.latency, self.answered, reply, keep_alive)
            return
        if path == "/stats" and method == "GET":
            self.send(response(200, json.dumps(self.server.stats.report()).encode(), keep_alive))
        elif path == "/stats/reset" and method == "POST":
            self.server.stats.reset()
            self.send(response(200, b"{}", keep_alive))
        else:
            self.send(response(404, b'{"error": {"message": "no such route"}}', keep_alive))

    def answered(self, reply: bytes, keep_alive: bool) -> None:
        self.server.stats.end()
        self.send(reply)
        if not keep_alive and self.transport is not None:
            self.transport.close()

    def send(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(data)


async def serve(host: str, port: int, latency: float) -> None:
    server = Server(latency)
    loop = asyncio.get_running_loop()
    listening = await loop.create_server(lambda: Connection(server), host, port, backlog=4096)
    bound = listening.sockets[0].getsockname()[1]
    print(f"serving at http://{host}:{bound}/v1", flush=True)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    listening.close()
    print(json.dumps(server.stats.report()), file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds before each reply")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.host, args.port, args.latency))


if __name__ == "__main__":
    main()
