"""The per-request timeout and the attempts per call reach the LLM config from the CLI's
flags and from their environment variables."""

import pytest
from cli_support import MODEL, SCENARIOS, invoke

from sotopia_are.testing import LocalLLMServer, Reply

SPEC = SCENARIOS / "bakery_negotiation.json"


@pytest.mark.parametrize("by_env", [False, True], ids=["flag", "env"])
def test_timeout_reaches_the_config(
    redis_url: str, llm_server: LocalLLMServer, by_env: bool
) -> None:
    llm_server.rule = lambda _body: Reply.hanging()
    options = [] if by_env else ["--timeout", "0.5"]
    env = {"SOTOPIA_ARE_TIMEOUT": "0.5"} if by_env else {}
    result = invoke("run", SPEC, "--model", MODEL, "--api-base", llm_server.url,
                    "--no-evaluate", "--max-turns", "1", *options, env=env)  # fmt: skip
    assert result.exit_code == 1
    silent = "gave no answer: 1 of 1 requests timed out (it answered nothing for 0.5 s"
    assert silent in result.output


@pytest.mark.parametrize("by_env", [False, True], ids=["flag", "env"])
def test_request_attempts_reach_the_config(
    redis_url: str, llm_server: LocalLLMServer, by_env: bool
) -> None:
    llm_server.rule = lambda _body: Reply.server_error(502)
    options = [] if by_env else ["--request-attempts", "2"]
    env = {"SOTOPIA_ARE_REQUEST_ATTEMPTS": "2"} if by_env else {}
    result = invoke("run", SPEC, "--model", MODEL, "--api-base", llm_server.url,
                    "--no-evaluate", "--max-turns", "1", *options, env=env)  # fmt: skip
    assert result.exit_code == 1
    assert "still failing after 2 requests" in result.output
    assert len(llm_server.chat_requests) == 2
