"""A tiny OpenAI-compatible chat-completions server for the throughput benchmark.

It is deliberately not :mod:`sotopia_are.testing`: it shares no code with the framework
it measures, runs in its own process, and answers like an outside server would. Every
``POST /v1/chat/completions`` is answered after a fixed latency (``--latency``, default
50 ms) with the simplest valid instance of the request's JSON schema
(``response_format.json_schema.schema``): ``"speak"`` where an enum allows it (so
agents talk for every turn), the middle of an integer range (judge ratings), ``"…"``
for text. A request without a schema gets ``{"action_type": "speak", "argument": "…"}``
in its text, which an agent asked in ``prompt`` or ``json_object`` mode accepts.

``--answers random-schema`` draws each enum's value and each integer at random
(``--seed``) instead: random legal play where a game's schema offers only legal moves.

``--answers sotopia-werewolf`` is for Sotopia's Werewolf example
(``benchmarks/sotopia_werewolf.py``), whose moves are free text inside a fixed
``AgentAction`` schema (``"action_type": "action", "argument": "vote Aurora"``) that its
handler reads by keyword and a capitalised name: the schema alone cannot say what is legal,
so an answer of ``"speak"`` everywhere plays no move and every game runs to Sotopia's turn
cap. In this mode a request whose prompt lists ``Your available action type(s): [...]`` is
answered with ``"action"`` when offered, and an argument of one of the commands the
prompt's instructions quote (``'vote NAME'``, ``'kill NAME'``, ``'inspect NAME'``, ``'save
NAME'``, ``'poison NAME'``, or ``skip``) with a player drawn at random (``--seed``) from
``The players in this game are: ...``, less the one asking and those the history announces
dead; a ``save`` names the player the prompt says was killed. Other requests are answered
as in the default mode.

``--answers sotopia`` is for Sotopia 0.1.5's two-agent episodes
(``benchmarks/sotopia_throughput_side.py``). Their agents ask with a JSON schema
(``AgentAction``), answered as in the default mode (``"speak"``); their judge
(``EpisodeLLMEvaluator``) asks with no schema, putting it in the prompt after ``Please
follow the format:`` (``EvaluationForAgents``: ``evaluations`` maps each agent key the
prompt names, ``use exactly these keys: ["agent_1", ...]``, to one ``[reasoning, score]``
pair per dimension of the schema). Such a request is answered with that object, every
score 0 (inside each of their dimensions' ranges, 0 to 10, -5 to 5 and -10 to 0, which
their validators check but the schema does not say), so that their parser accepts it on
the first try: the default mode's fallback does not parse, and their judge then asks again
for a reformatting (``format_bad_output``) and, that failing, returns no scores. Other
requests are answered as in the default mode, so ours get the same answers in either.

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
import random
import re
import signal
import sys
import time
from typing import Any

FALLBACK = json.dumps({"action_type": "speak", "argument": "…"})

# Sotopia's Werewolf prompts (examples/experimental/werewolves in their repository).
AVAILABLE = re.compile(r"Your available action type\(s\): \[([^\]]*)\]")
PLAYERS = re.compile(r"The players in this game are: (.*?), and during the day")
ASKER = re.compile(r"playing the game as (\w+)")
DEAD = re.compile(r"\[Game\] (\w+) (?:was voted out|was killed by werewolves|died by witch)")
COMMAND = re.compile(r"'(\w+) NAME'")
VICTIM = re.compile(r"(\w+) is killed by werewolves\.")
# Sotopia 0.1.5's judge prompt (sotopia/envs/evaluators.py, EpisodeLLMEvaluator).
JUDGE_FORMAT = "Please follow the format:"
JUDGE_KEYS = re.compile(r"use exactly these keys: (\[[^\]]*\])")


def instance(
    schema: dict[str, Any],
    definitions: dict[str, Any],
    path: str = "",
    rng: random.Random | None = None,
) -> Any:
    """The simplest value that validates against ``schema`` (see the module); text says
    where it is (``path``), so a judge's reasons differ from one participant to the next.
    With ``rng``, an enum's value and an integer are drawn from their options instead
    (``--answers random-schema``)."""
    if "$ref" in schema:
        target = definitions[str(schema["$ref"]).rsplit("/", 1)[-1]]
        return instance(target, definitions, path, rng)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return instance(options[0], definitions, path, rng)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        options = list(schema["enum"])
        if rng is not None:
            return rng.choice(options)
        return "speak" if "speak" in options else options[0]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            name: instance(properties[name], definitions, f"{path}/{name}", rng)
            for name in schema.get("required", list(properties))
        }
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [instance(schema["items"], definitions, path, rng) for _ in range(count)]
    if kind == "integer":
        low, high = schema.get("minimum", 0), schema.get("maximum", 10)
        return rng.randint(low, high) if rng is not None else (low + high) // 2
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return f"… ({path.strip('/')})" if "/" in path.strip("/") else "…"


def prompt_of(body: dict[str, Any]) -> str:
    """The text of a request's messages, one after the other."""
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def werewolf_move(prompt: str, rng: random.Random) -> str | None:
    """A legal-looking move for one of Sotopia's Werewolf prompts (see the module), or
    None when ``prompt`` is not one."""
    available = AVAILABLE.findall(prompt)
    players = PLAYERS.search(prompt)
    if not available or players is None:
        return None
    offered = available[-1].split()
    if "action" not in offered:
        kind = "speak" if "speak" in offered else (offered or ["none"])[0]
        return json.dumps({"action_type": kind, "argument": "…", "to": []})
    # Only the text after the last list of action types: the instructions of this turn.
    instructions = prompt[prompt.rindex("Your available action type(s)") :]
    asker = ASKER.search(prompt)
    dead = set(DEAD.findall(prompt))
    living = [
        name.strip()
        for name in players.group(1).split(",")
        if name.strip() not in dead and (asker is None or name.strip() != asker.group(1))
    ]
    commands = COMMAND.findall(instructions) + (["skip"] if "'skip'" in instructions else [])
    command = rng.choice(commands) if commands else "skip"
    victim = VICTIM.search(instructions)
    if command == "save" and victim is not None:
        argument = f"save {victim.group(1)}"
    elif command == "skip" or not living:
        argument = "skip"
    else:
        argument = f"{command} {rng.choice(living)}"
    return json.dumps({"action_type": "action", "argument": argument, "to": []})


def sotopia_judgement(prompt: str) -> str | None:
    """The judgement Sotopia's judge prompt asks for (see the module), or None when
    ``prompt`` is not one."""
    at = prompt.rfind(JUDGE_FORMAT)
    if at < 0:
        return None
    try:
        schema, _ = json.JSONDecoder().raw_decode(prompt[at + len(JUDGE_FORMAT) :].lstrip())
        ref = schema["properties"]["evaluations"]["additionalProperties"]["$ref"]
        dimensions = list(schema["$defs"][ref.rsplit("/", 1)[-1]]["properties"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    keys = JUDGE_KEYS.search(prompt)
    agents = json.loads(keys.group(1)) if keys else ["agent_1", "agent_2"]

    def judged(agent: str) -> dict[str, list[Any]]:
        return {name: [f"… ({agent}/{name})", 0] for name in dimensions}

    return json.dumps({"evaluations": {agent: judged(agent) for agent in agents}})


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
    def __init__(self, latency: float, answers: str = "schema", seed: int = 0) -> None:
        self.latency = latency
        self.answers = answers
        self.rng = random.Random(seed)
        self.stats = Stats()
        self.ids = itertools.count(1)
        self._answers: dict[str, str] = {}

    def answer(self, body: dict[str, Any]) -> bytes:
        """The chat completion for ``body``."""
        response_format = body.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("schema")
        # The prompt-reading modes answer what the prompt asks for, when they recognise it.
        # (Sotopia's judge asks with no schema: the requests with one are not read.)
        scripted = None
        if self.answers == "sotopia-werewolf":
            scripted = werewolf_move(prompt_of(body), self.rng)
        elif self.answers == "sotopia" and not isinstance(schema, dict):
            scripted = sotopia_judgement(prompt_of(body))
        if scripted is not None:
            content = scripted
        elif isinstance(schema, dict) and self.answers == "random-schema":
            content = json.dumps(instance(schema, schema.get("$defs", {}), rng=self.rng))
        elif isinstance(schema, dict):
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


async def serve(host: str, port: int, latency: float, answers: str, seed: int) -> None:
    server = Server(latency, answers, seed)
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
    parser.add_argument(
        "--answers",
        choices=["schema", "random-schema", "sotopia-werewolf", "sotopia"],
        default="schema",
        help="what to answer (see the module); default: the schema's simplest instance",
    )
    parser.add_argument("--seed", type=int, default=0, help="the random moves' seed")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.host, args.port, args.latency, args.answers, args.seed))


if __name__ == "__main__":
    main()
