"""A reply's body is read up to a cap counted after decompression
(``LLMConfig.max_reply_bytes``, 16 MB by default): a small gzip reply that inflates to
gigabytes (a gzip bomb) is cut off there and named as a malformed reply on the call, not
inflated whole into the process's memory."""

import gzip
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest

from sotopia_are.llm import LLMSession, TransientLLMError
from sotopia_are.llm.config import DEFAULT_MAX_REPLY_BYTES
from sotopia_are.llm.errors import MalformedReplyError
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"


def completion(content: str) -> bytes:
    message = {"role": "assistant", "content": content}
    return json.dumps({"choices": [{"index": 0, "message": message}]}).encode()


async def test_a_gzip_bomb_is_a_malformed_reply_recorded_on_the_call(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    bomb = Reply.gzip_bomb(4 * DEFAULT_MAX_REPLY_BYTES)
    assert bomb.body is not None and len(bomb.body) < DEFAULT_MAX_REPLY_BYTES // 100
    llm_server.rule = lambda body: bomb
    with pytest.raises(MalformedReplyError) as raised:
        await make_session().generate(MODEL, "test/plain.j2", {"word": "x"})
    assert isinstance(raised.value, TransientLLMError)
    assert f"over {DEFAULT_MAX_REPLY_BYTES:,} bytes once decompressed" in str(raised.value)
    assert raised.value.call is not None
    attempts = raised.value.call.attempts
    assert len(attempts) == len(llm_server.chat_requests) > 1
    assert all("once decompressed" in (a.error or "") for a in attempts)


async def test_a_gzip_reply_under_the_cap_is_read(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    body = gzip.compress(completion("compressed but fine"))
    llm_server.enqueue(Reply(body=body, headers={"Content-Encoding": "gzip"}))
    result = await make_session().generate(MODEL, "test/plain.j2", {"word": "x"})
    assert result.value == "compressed but fine"


@pytest.mark.parametrize(("cap", "accepted"), [(4096, True), (1024, False)])
async def test_the_cap_is_configurable(
    cap: int,
    accepted: bool,
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
) -> None:
    text = "a" * 2000
    llm_server.rule = lambda body: Reply(body=completion(text))
    session = make_session(max_reply_bytes=cap)
    if accepted:
        assert (await session.generate(MODEL, "test/plain.j2", {"word": "x"})).value == text
    else:
        with pytest.raises(MalformedReplyError, match=f"over {cap:,} bytes"):
            await session.generate(MODEL, "test/plain.j2", {"word": "x"})


def test_a_one_gigabyte_bomb_does_not_take_the_memory() -> None:
    """Before the cap, one 1 GB bomb (1 MB on the wire) raised the peak RSS to ~3 GB."""
    script = textwrap.dedent(
        """
        import asyncio
        from sotopia_are.llm import LLMConfig
        from sotopia_are.llm import http_transport
        from sotopia_are.llm.errors import MalformedReplyError
        from sotopia_are.llm.request import LLMRequest, Message
        from sotopia_are.testing import LocalLLMServer, Reply

        bomb = Reply.gzip_bomb(1 << 30)
        with LocalLLMServer(lambda body: bomb) as server:
            endpoint = LLMConfig(api_base=server.url).endpoint("openai/x")
            request = LLMRequest(model="openai/x", messages=(Message(role="user", content="hi"),))
            try:
                asyncio.run(http_transport.send(request, endpoint, 60.0))
            except MalformedReplyError:
                pass
        # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across fork and exec, so a child of
        # a large pytest process would report the parent's size.
        with open("/proc/self/status") as status:
            hwm = next(line for line in status if line.startswith("VmHWM:"))
        print(int(hwm.split()[1]) // 1024)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    peak_mb = int(done.stdout.strip().splitlines()[-1])
    assert peak_mb < 400, f"peak RSS {peak_mb} MB"
