"""Keys: a missing or rejected key fails at once naming the fix, never retried; a keyless
server at an api_base needs no key (a placeholder is sent, never to a provider's default
endpoint); a key the provider's own variable gives wins over the placeholder."""

import time
from collections.abc import Callable

import pytest

from sotopia_are.llm import API_BASE_ENV, API_KEY_ENV, LLMSession, PermanentLLMError, RetryPolicy
from sotopia_are.llm.transport import PLACEHOLDER_KEY
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"

# The defaults a user gets: six attempts, backoff from a second. A retried missing key
# would take seconds, so the time bound below tells a retry apart from a fast failure.
USER_RETRY = RetryPolicy()


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key and no base URL from the environment, whatever the machine has set."""
    for name in (
        API_KEY_ENV,
        API_BASE_ENV,
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_API_BASE",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        # litellm raises these as a 500 InternalServerError and an APIConnectionError,
        # both retried if the exception's type decided.
        ("openai/gpt-4o-mini", "OPENAI_API_KEY"),
        ("gemini/gemini-1.5-flash", "GEMINI_API_KEY"),
    ],
)
async def test_a_missing_key_for_a_hosted_model_fails_at_once_naming_the_variable(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    monkeypatch: pytest.MonkeyPatch,
    model: str,
    variable: str,
) -> None:
    # OpenAI's default endpoint moved to the local server: had a request (with the
    # placeholder key) gone out, the server would have seen it.
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.url)
    # Importing litellm takes seconds on the first call; that is not what is timed here
    # (the warm-up goes through litellm: at an api_base, auto would take the HTTP path).
    await make_session(transport="litellm").generate(MODEL, "test/plain.j2", {"word": "warm-up"})
    session = make_session(api_base=None, api_key=None, retry=USER_RETRY)
    started = time.perf_counter()
    with pytest.raises(PermanentLLMError) as info:
        await session.generate(model, "test/plain.j2", {"word": "x"})
    elapsed = time.perf_counter() - started
    message = str(info.value)
    assert f"model {model!r} at the provider's default endpoint: no API key was given" in message
    assert variable in message and "LLMConfig.api_key" in message and API_KEY_ENV in message
    assert info.value.call is not None
    assert [a.error_kind for a in info.value.call.attempts] == ["permanent"]
    assert elapsed < 1.0
    assert len(llm_server.chat_requests) == 1  # the warm-up's only


async def test_a_401_is_permanent_after_one_request(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = lambda _request: Reply.error(401, "Incorrect API key provided")
    session = make_session(api_key=None, retry=USER_RETRY)
    with pytest.raises(PermanentLLMError) as info:
        await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    assert len(llm_server.chat_requests) == 1
    message = str(info.value)
    assert f"at {llm_server.url}: the credentials were rejected" in message
    assert "OPENAI_API_KEY" in message and API_KEY_ENV in message
    assert info.value.call is not None and len(info.value.call.attempts) == 1


async def test_a_keyless_local_server_needs_no_key(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    session = make_session(api_key=None)
    result = await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    assert result.value == "Say x."
    (request,) = llm_server.chat_requests
    assert request.headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"


async def test_the_providers_own_key_variable_wins_over_the_placeholder(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    await make_session(api_key=None).generate(MODEL, "test/plain.j2", {"word": "x"})
    (request,) = llm_server.chat_requests
    assert request.headers["authorization"] == "Bearer sk-from-the-environment"
