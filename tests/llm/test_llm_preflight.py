"""The preflight against real servers: the local test server (listing its models or not),
a closed port, a bare HTTP server with no model listing, and litellm's own key checks."""

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from sotopia_are.llm import (
    ConfigurationError,
    LLMConfig,
    LLMSession,
    ModelUse,
    PermanentLLMError,
    apreflight,
    preflight,
)
from sotopia_are.testing import LocalLLMServer


def closed_port_url() -> str:
    """The URL of a port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def listing() -> Iterator[LocalLLMServer]:
    """A server that lists its models, as vLLM and llama.cpp do."""
    with LocalLLMServer(model_ids=("qwen15", "llama3:latest")) as server:
        yield server


def gets(server: LocalLLMServer) -> list[str]:
    return [r.path for r in server.requests if r.method == "GET"]


def test_a_listed_model_passes_once_per_process(listing: LocalLLMServer) -> None:
    config = LLMConfig(api_base=listing.url)
    preflight([ModelUse("openai/qwen15", config), ModelUse("openai/qwen15", config, "the judge")])
    assert gets(listing) == ["/v1/models"] and not listing.chat_requests
    preflight([ModelUse("openai/qwen15", config)])  # remembered: not asked again
    assert gets(listing) == ["/v1/models"]


_PREFLIGHT_ALONE = """
import sys
from sotopia_are.llm import LLMConfig, ModelUse, preflight
preflight([ModelUse("openai/qwen15", LLMConfig(api_base=sys.argv[1]))])
print("aiohttp" in sys.modules)
"""


def test_the_check_imports_no_aiohttp(listing: LocalLLMServer) -> None:
    """Every command that calls a model checks first: its GET is this package's own client,
    not aiohttp (a tenth of a second of imports for one request)."""
    shown = subprocess.run(
        [sys.executable, "-c", _PREFLIGHT_ALONE, listing.url],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert shown.stdout.strip() == "False"
    assert gets(listing) == ["/v1/models"]


def test_ollamas_latest_tag_may_be_left_off(listing: LocalLLMServer) -> None:
    preflight([ModelUse("openai/llama3", LLMConfig(api_base=listing.url))])


def test_a_model_the_server_does_not_list_names_the_served_ones(listing: LocalLLMServer) -> None:
    config = LLMConfig(api_base=listing.url)
    with pytest.raises(ConfigurationError) as raised:
        preflight([ModelUse("openai/qwen-15", config, "agent Mara")])
    message = str(raised.value)
    assert "model 'openai/qwen-15' (agent Mara) is not served at" in message
    assert "qwen15, llama3:latest" in message and "'openai/qwen15'" in message
    assert "\n" not in message and not listing.chat_requests
    # A failed check is asked again (the user may have fixed it meanwhile).
    with pytest.raises(ConfigurationError):
        preflight([ModelUse("openai/qwen-15", config)])
    assert gets(listing) == ["/v1/models", "/v1/models"]


def test_a_server_that_lists_nothing_is_asked_for_the_model(llm_server: LocalLLMServer) -> None:
    # The test server by default plays any model and lists none: "retrieve model" answers.
    preflight([ModelUse("openai/anything", LLMConfig(api_base=llm_server.url))])
    assert gets(llm_server) == ["/v1/models", "/v1/models/anything"]
    assert not llm_server.chat_requests


def test_every_failing_endpoint_is_named_in_one_error(listing: LocalLLMServer) -> None:
    config = LLMConfig(api_base=listing.url)
    closed = LLMConfig(api_base=closed_port_url())
    uses = [
        ModelUse("openai/wrong", config, "the agents"),
        ModelUse("openai/qwen15", closed, "the judge"),
    ]
    with pytest.raises(ConfigurationError) as raised:
        preflight(uses)
    message = str(raised.value)
    assert "the agents" in message and "is not served" in message
    assert "the judge" in message and "cannot be reached" in message


def test_an_unreachable_server_fails_within_seconds() -> None:
    url = closed_port_url()
    started = time.monotonic()
    with pytest.raises(ConfigurationError) as raised:
        preflight([ModelUse("openai/qwen15", LLMConfig(api_base=url))])
    assert time.monotonic() - started < 5
    assert f"the server at {url} cannot be reached" in str(raised.value)
    assert "--api-base" in str(raised.value)


def test_an_api_base_that_is_no_url_is_named() -> None:
    with pytest.raises(ConfigurationError, match="is not an http"):
        preflight([ModelUse("openai/qwen15", LLMConfig(api_base="localhost:8000/v1"))])


def test_a_missing_provider_key_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("SOTOPIA_ARE_API_KEY", raising=False)
    monkeypatch.delenv("SOTOPIA_ARE_API_BASE", raising=False)
    with pytest.raises(ConfigurationError) as raised:
        preflight([ModelUse("gpt-4o-mini", LLMConfig(), "the judge")])
    message = str(raised.value)
    assert message.startswith("model 'gpt-4o-mini' (the judge) needs an API key")
    assert "set OPENAI_API_KEY" in message and "--api-key" in message
    assert isinstance(raised.value, PermanentLLMError)  # what a batch treats as fatal


def test_a_model_without_a_provider_is_named(llm_server: LocalLLMServer) -> None:
    # Without an openai/ prefix the request would go through litellm, which cannot tell
    # which provider serves it.
    with pytest.raises(ConfigurationError, match="prefix it with one"):
        preflight([ModelUse("qwen15", LLMConfig(api_base=llm_server.url))])
    assert not llm_server.requests


def test_a_replaying_session_calls_no_model(tmp_path: Path) -> None:
    recording = tmp_path / "empty.jsonl"
    recording.write_text("")
    session = LLMSession.replaying(recording, LLMConfig(api_base=closed_port_url()))
    preflight([ModelUse("openai/qwen15", session)])


class Bare(BaseHTTPRequestHandler):
    """A server with no model listing and no "retrieve model": only chat, answering with
    the status the test sets (404: the model does not exist)."""

    status = 200
    key = ""  # the key it wants, if any (as vLLM's --api-key)
    chats: ClassVar[list[dict[str, object]]] = []

    def do_GET(self) -> None:
        if self.key and self.headers.get("Authorization") != f"Bearer {self.key}":
            self._answer(401, {"error": {"message": "invalid api key"}})
            return
        self._answer(404, {"error": {"message": "no route"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).chats.append(body)
        if self.status != 200:
            self._answer(self.status, {"error": {"message": "model 'x' not found"}})
            return
        choice = {"index": 0, "message": {"role": "assistant", "content": "O"}}
        self._answer(200, {"choices": [choice], "usage": {}})

    def _answer(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def bare() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Bare)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Bare.chats, Bare.status, Bare.key = [], 200, ""
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


async def test_where_nothing_else_tells_a_one_token_request_does(bare: str) -> None:
    await apreflight([ModelUse("openai/served", LLMConfig(api_base=bare))])
    (probe,) = Bare.chats
    assert probe["max_tokens"] == 1 and probe["model"] == "served"
    Bare.status = 404
    with pytest.raises(ConfigurationError, match="'openai/missing' was not found"):
        await apreflight([ModelUse("openai/missing", LLMConfig(api_base=bare))])


async def test_a_busy_server_is_no_configuration_mistake(bare: str) -> None:
    Bare.status = 503
    await apreflight([ModelUse("openai/busy", LLMConfig(api_base=bare))])
    assert len(Bare.chats) == 1  # asked once, not retried


def test_a_rejected_key_is_named_before_any_request(bare: str) -> None:
    Bare.key = "sk-right"
    with pytest.raises(ConfigurationError, match="rejected the key \\(HTTP 401\\)"):
        preflight([ModelUse("openai/m", LLMConfig(api_base=bare, api_key="sk-wrong"))])
    assert not Bare.chats
    preflight([ModelUse("openai/m", LLMConfig(api_base=bare, api_key="sk-right"))])
