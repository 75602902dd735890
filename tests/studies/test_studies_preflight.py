"""The library verbs check every model before anything is stored: the same mistake raises
the same typed error on the agents and on the judge, and ``preflight=False`` skips it."""

import socket
from collections.abc import Iterator

import pytest

import sotopia_are as sa
from sotopia_are.llm import ConfigurationError
from sotopia_are.storage import EpisodeStore
from sotopia_are.studies import benchmark, rate_stored
from sotopia_are.testing import LocalLLMServer, schema_rule

NAMES = ["Mara Quinn", "Teo Alvarez"]
SERVED = "openai/qwen15"


def spec(episode_id: str = "bakery-1") -> sa.EpisodeSpec:
    return sa.EpisodeSpec(
        episode_id=episode_id,
        scenario="A bakery before closing.",
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=2,
    )


@pytest.fixture
def listing() -> Iterator[LocalLLMServer]:
    with LocalLLMServer(schema_rule, model_ids=("qwen15",)) as server:
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


def judge_at(model: str, api_base: str | None) -> sa.LLMJudge:
    return sa.LLMJudge(model, config=sa.LLMConfig(api_base=api_base))


@pytest.mark.parametrize("on", ["agents", "judge"])
@pytest.mark.parametrize("mistake", ["wrong model", "unreachable", "missing key"])
def test_run_raises_the_typed_error_before_storing(
    on: str, mistake: str, listing: LocalLLMServer, store: EpisodeStore, no_openai_key: None
) -> None:
    bad_base = {"wrong model": listing.url, "unreachable": closed_port_url(), "missing key": None}
    bad_model = {"wrong model": "openai/qwen-15", "unreachable": SERVED, "missing key": "gpt-4o"}
    bad = (bad_model[mistake], bad_base[mistake])
    good = (SERVED, listing.url)
    agents, judged = (bad, good) if on == "agents" else (good, bad)
    with pytest.raises(ConfigurationError) as raised:
        sa.run(
            spec(),
            models=agents[0],
            config=sa.LLMConfig(api_base=agents[1]),
            judge=judge_at(*judged),
            store=store,
        )
    message = str(raised.value)
    who = "the judge" if on == "judge" else "agent Mara Quinn, agent Teo Alvarez"
    assert f"({who})" in message
    expected = {
        "wrong model": "which serves: qwen15",
        "unreachable": "cannot be reached",
        "missing key": "set OPENAI_API_KEY",
    }
    assert expected[mistake] in message
    assert store.episode_ids() == [] and not listing.chat_requests


def test_without_preflight_a_mistake_is_the_episodes_failure_as_before(
    store: EpisodeStore,
) -> None:
    config = sa.LLMConfig(api_base=closed_port_url(), timeout_s=2.0)
    record = sa.run(spec(), models=SERVED, config=config, store=store, preflight=False)
    assert record.status is sa.EpisodeStatus.FAILED
    assert store.episode_ids() == [record.episode_id]


def test_scripted_agents_need_no_check(store: EpisodeStore, no_openai_key: None) -> None:
    action = sa.AgentAction(action_type="speak", argument="Hello.")
    agents = [sa.ScriptedAgent(name, [action]) for name in NAMES]
    # The models only label the players: were they checked, the missing key would fail.
    record = sa.run(spec(), agents, models="gpt-4o-mini", store=store)
    assert record.status is sa.EpisodeStatus.COMPLETE


def test_batch_checks_once_in_the_parent_not_in_its_workers(
    listing: LocalLLMServer, store: EpisodeStore
) -> None:
    result = sa.batch(
        [spec("a"), spec("b")],
        SERVED,
        tag="checked",
        store=store,
        judge_model=SERVED,
        config=sa.LLMConfig(api_base=listing.url),
        workers=2,
    )
    assert not result.failed
    # Each worker asks a llama.cpp-style /props for the server's slots; the model list, the
    # preflight's check, is asked once.
    asked = [r.path for r in listing.requests if r.method == "GET" and r.path != "/props"]
    assert asked == ["/v1/models"]


def test_batch_and_benchmark_store_nothing_for_a_mistake(
    listing: LocalLLMServer, store: EpisodeStore
) -> None:
    config = sa.LLMConfig(api_base=listing.url)
    with pytest.raises(ConfigurationError, match="'openai/nope' \\(the judge\\) is not served"):
        sa.batch([spec()], SERVED, tag="t", store=store, judge_model="openai/nope", config=config)
    with pytest.raises(ConfigurationError, match="'openai/nope' \\(the agents\\) is not served"):
        benchmark(
            [spec()], ["openai/nope"], SERVED, tag="b", judge_model=SERVED, store=store,
            config=config,
        )  # fmt: skip
    assert store.episode_ids() == [] and not listing.chat_requests


def test_rating_checks_its_judges_before_rating_any(
    listing: LocalLLMServer, store: EpisodeStore
) -> None:
    record = sa.run(spec(), models=SERVED, config=sa.LLMConfig(api_base=listing.url), store=store)
    good, bad = judge_at(SERVED, listing.url), judge_at("openai/nope", listing.url)
    sent = len(listing.chat_requests)
    with pytest.raises(ConfigurationError, match="is not served"):
        sa.rate(record, bad, store=store)
    with pytest.raises(ConfigurationError, match="is not served"):
        rate_stored(store, [record.episode_id], [good, bad])
    assert len(listing.chat_requests) == sent and store.load(record.episode_id).verdicts == ()
