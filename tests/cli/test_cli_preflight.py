"""Configuration mistakes on the command line: one ``error:`` line on stderr, exit 2, no
episode stored — the same on the agents and on the judge; ``--no-preflight`` skips the
check (the mistake is then the episode's failure, as before)."""

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import BAKERY, SCENARIOS, SCRIPTS, conversation_rule, invoke
from click.testing import Result

from sotopia_are.storage import EpisodeStatus, connect
from sotopia_are.testing import LocalLLMServer

SERVED = "openai/test-model"
SUBSET = Path(__file__).parents[1] / "data" / "sotopia_subset"
BAKERY_SPEC = SCENARIOS / "bakery_negotiation.json"


@pytest.fixture
def listing() -> Iterator[LocalLLMServer]:
    """A server that lists the one model it serves, as vLLM and llama.cpp do."""
    with LocalLLMServer(conversation_rule(BAKERY), model_ids=("test-model",)) as server:
        yield server


@pytest.fixture
def no_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("OPENAI_API_KEY", "SOTOPIA_ARE_API_KEY", "SOTOPIA_ARE_API_BASE"):
        monkeypatch.delenv(variable, raising=False)


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def stored() -> list[str]:
    with connect() as store:
        return store.episode_ids()


def assert_configuration_error(result: Result, *expected: str) -> None:
    """Exit 2 with one ``error:`` line on stderr holding ``expected``, nothing on stdout
    (no episode heading either), nothing stored."""
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and all(text in line for text in expected), line
    assert "Traceback" not in result.output
    assert stored() == []


def run(*args: str) -> Result:
    return invoke("run", BAKERY_SPEC, "--max-turns", "2", "--tag", "t", *args)


@pytest.mark.parametrize("on", ["agents", "judge"])
def test_a_model_the_server_does_not_serve(
    on: str, redis_url: str, listing: LocalLLMServer
) -> None:
    models = ("openai/wrong", SERVED) if on == "agents" else (SERVED, "openai/wrong")
    result = run(
        "--model", models[0], "--judge-model", models[1], "--api-base", listing.url
    )  # fmt: skip
    who = "the judge" if on == "judge" else "agent Mara Quinn"
    assert_configuration_error(result, f"'openai/wrong' ({who}", "which serves: test-model")
    assert not listing.chat_requests


def test_an_unreachable_server_on_the_agents_and_on_the_judge(redis_url: str) -> None:
    url = closed_port_url()
    started = time.monotonic()
    played = run("--model", SERVED, "--api-base", url)
    assert_configuration_error(played, "agent Mara Quinn", "the judge", "cannot be reached")
    rated = invoke(
        "evaluate", "--script", SCRIPTS / "bakery_negotiation.txt", "--spec", BAKERY_SPEC,
        "--judge-model", SERVED, "--api-base", url, "--store",
    )  # fmt: skip
    assert_configuration_error(rated, "(the judge)", f"the server at {url} cannot be reached")
    batched = invoke("batch", BAKERY_SPEC, "--model", SERVED, "--api-base", url)
    assert_configuration_error(batched, "(the agents, the judge)", "cannot be reached")
    assert time.monotonic() - started < 10


def test_a_missing_key_names_its_variable_on_the_agents_and_on_the_judge(
    redis_url: str, no_openai_key: None
) -> None:
    played = run("--model", "gpt-4o-mini", "--no-evaluate")
    assert_configuration_error(played, "(agent Mara Quinn, agent Teo Alvarez)", "OPENAI_API_KEY")
    rated = invoke(
        "evaluate", "--script", SCRIPTS / "bakery_negotiation.txt", "--spec", BAKERY_SPEC,
        "--judge-model", "gpt-4o-mini", "--store",
    )  # fmt: skip
    assert_configuration_error(rated, "(the judge)", "set OPENAI_API_KEY")
    # The same words for the same mistake, whoever makes it.
    assert played.stderr.split(") ", 1)[1] == rated.stderr.split(") ", 1)[1]


def test_benchmark_checks_before_playing(redis_url: str, listing: LocalLLMServer) -> None:
    for name, kind in [("agent_profiles", "agents"), ("environment_profiles", "environments")]:
        imported = invoke("import", SUBSET / f"{name}.jsonl", "--kind", kind)
        assert imported.exit_code == 0, imported.output
    result = invoke(
        "benchmark", "--tasks", SUBSET / "env_agent_combos.jsonl", "--sample", "1",
        "--model", "openai/nope", "--partner", SERVED, "--judge-model", SERVED,
        "--api-base", listing.url,
    )  # fmt: skip
    assert_configuration_error(result, "'openai/nope' (the agents) is not served")


def test_evaluate_checks_the_whole_panel_before_rating(
    redis_url: str, listing: LocalLLMServer
) -> None:
    played = run("--model", SERVED, "--api-base", listing.url, "--no-evaluate")
    assert played.exit_code == 0, played.output
    (episode_id,) = stored()
    sent = len(listing.chat_requests)
    rated = invoke(
        "evaluate", "--tag", "t", "--judge-model", SERVED, "--judge-model", "openai/nope",
        "--api-base", listing.url,
    )  # fmt: skip
    assert rated.exit_code == 2 and "'openai/nope' (the judge) is not served" in rated.stderr
    assert len(listing.chat_requests) == sent  # not even the good judge rated
    with connect() as store:
        assert store.load(episode_id).verdicts == ()


def test_no_preflight_keeps_the_old_behaviour(redis_url: str) -> None:
    url = closed_port_url()
    result = run(
        "--model", SERVED, "--api-base", url, "--no-preflight", "--timeout", "2",
        "--request-attempts", "1",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    (episode_id,) = stored()
    with connect() as store:
        assert store.load(episode_id).status is EpisodeStatus.FAILED


def test_a_wrong_key_exits_2_within_seconds_with_nothing_stored(redis_url: str) -> None:
    # A server that takes one key and answers 401 to any other, as a provider does.
    with LocalLLMServer(conversation_rule(BAKERY), api_key="sk-right") as server:
        started = time.monotonic()
        result = invoke(
            "batch", BAKERY_SPEC, "-n", "2", "--max-turns", "2", "--tag", "t", "--model",
            SERVED, "--judge-model", SERVED, "--api-base", server.url, "--api-key", "sk-wrong",
        )  # fmt: skip
        assert time.monotonic() - started < 10
        assert_configuration_error(result, "rejected the key")
        assert server.chat_requests == []
        right = invoke(
            "batch", BAKERY_SPEC, "-n", "2", "--max-turns", "2", "--tag", "t", "--model",
            SERVED, "--judge-model", SERVED, "--api-base", server.url, "--api-key", "sk-right",
        )  # fmt: skip
        assert right.exit_code == 0, right.output
        assert len(stored()) == 2
