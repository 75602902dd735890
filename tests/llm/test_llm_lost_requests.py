"""A server that mishandles one request of a keep-alive connection while it answers the
others: each call still ends in bounded time with its own answer, the fault kept as a
transient attempt and retried (never a reply taken for another request's)."""

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Literal

import pytest

from sotopia_are.llm import LLMConfig, LLMSession, PromptLibrary, RetryPolicy

MODEL = "openai/test-model"
CALLS = 8
TIMEOUT_S = 0.3

Fault = Literal["lose", "half", "close", "twice", "late"]


class Adversary:
    """An OpenAI-compatible server on one port whose ``nth`` chat request meets ``fault``:
    ``lose`` never answers it (the connection stays open), ``half`` sends half its answer
    and nothing more, ``close`` closes the connection once it is read, ``twice`` answers
    it twice, ``late`` answers it after the client gave up. Every answer says which
    request it answers (``answer to <word>``), so a reply paired with the wrong request
    shows."""

    def __init__(self, fault: Fault, nth: int = 2) -> None:
        self.fault, self.nth = fault, nth
        self.chat_requests = 0
        self.url = ""
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/v1"

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for handler in self._handlers:
            handler.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"(?i)content-length: *(\d+)", head)
                body = await reader.readexactly(int(length[1])) if length else b""
                if not head.startswith(b"POST ") or b"/chat/completions" not in head:
                    writer.write(_answer(404, {"error": {"message": "no route"}}))
                    continue
                self.chat_requests += 1
                said = json.loads(body)["messages"][-1]["content"]
                answer = _answer(200, _completion(f"answer to {said.split()[-1].rstrip('.')}"))
                if self.chat_requests != self.nth:
                    writer.write(answer)
                elif self.fault == "lose":
                    await reader.read()  # until the client drops the connection
                    return
                elif self.fault == "half":
                    writer.write(answer[: len(answer) // 2])
                    await reader.read()
                    return
                elif self.fault == "close":
                    return
                elif self.fault == "twice":
                    writer.write(answer + answer)
                else:  # late: after the client gave up on it (and on its connection)
                    await asyncio.sleep(3 * TIMEOUT_S)
                    writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client went away, or the test ended
        finally:
            writer.close()


def _completion(content: str) -> dict[str, object]:
    return {
        "id": "chatcmpl-adversary",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6},
    }


def _answer(status: int, payload: dict[str, object]) -> bytes:
    body = json.dumps(payload).encode()
    head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
    return head.encode() + b"\r\nConnection: keep-alive\r\n\r\n" + body


@pytest.fixture
async def adversary(request: pytest.FixtureRequest) -> AsyncIterator[Adversary]:
    server = Adversary(request.param)
    await server.start()
    yield server
    await server.stop()


async def _calls(
    adversary: Adversary, prompts: PromptLibrary
) -> tuple[float, list[str], list[str]]:
    """Run :data:`CALLS` calls at once against ``adversary``: the seconds they took, each
    call's answer, and the errors of the attempts they kept."""
    config = LLMConfig(
        api_base=adversary.url,
        api_key="sk-test",
        timeout_s=TIMEOUT_S,
        retry=RetryPolicy(max_attempts=3, initial_backoff_s=0.01, max_backoff_s=0.02),
    )
    session = LLMSession(config, prompts=prompts)
    started = time.monotonic()
    results = await asyncio.wait_for(
        asyncio.gather(
            *(session.generate(MODEL, "test/plain.j2", {"word": f"w{i}"}) for i in range(CALLS))
        ),
        timeout=10,
    )
    failed = [a for result in results for a in result.call.attempts if a.error_kind is not None]
    assert {attempt.error_kind for attempt in failed} <= {"transient"}
    return time.monotonic() - started, [r.value for r in results], [a.error or "" for a in failed]


@pytest.mark.parametrize("adversary", ["lose", "half"], indirect=True)
async def test_a_request_overtaken_and_never_answered_is_retried(
    adversary: Adversary, prompts: PromptLibrary
) -> None:
    # The server answers requests sent after it: past its timeout it is lost, not queued
    # (on main it waited LLMConfig.max_wait_s, 600 s: the server answers its probes).
    took, answers, errors = await _calls(adversary, prompts)
    assert answers == [f"answer to w{i}" for i in range(CALLS)]
    assert len(errors) == 1 and "answered requests sent after this one" in errors[0]
    assert adversary.chat_requests == CALLS + 1
    assert took < 4 * TIMEOUT_S + 1.0


@pytest.mark.parametrize("adversary", ["close"], indirect=True)
async def test_a_connection_closed_after_its_request_is_read_is_retried(
    adversary: Adversary, prompts: PromptLibrary
) -> None:
    took, answers, errors = await _calls(adversary, prompts)
    assert answers == [f"answer to w{i}" for i in range(CALLS)]
    # A fresh connection's loss is an attempt; a reused one's is sent again at once.
    assert len(errors) <= 1 and all("closed the connection" in e for e in errors)
    assert took < 2.0


@pytest.mark.parametrize("adversary", ["twice", "late"], indirect=True)
async def test_an_answer_nobody_waits_for_is_never_taken_for_another_request(
    adversary: Adversary, prompts: PromptLibrary
) -> None:
    took, answers, errors = await _calls(adversary, prompts)
    assert answers == [f"answer to w{i}" for i in range(CALLS)]
    if adversary.fault == "late":
        assert len(errors) == 1 and "answered requests sent after this one" in errors[0]
    else:
        assert errors == []
    assert took < 4 * TIMEOUT_S + 1.0
