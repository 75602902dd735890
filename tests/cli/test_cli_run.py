"""`sotopia-are run`: one LLM episode against the local server, from a spec or profiles."""

import pytest
from cli_support import BAKERY, EXAMPLES, MODEL, SCENARIOS, conversation_rule, invoke

from sotopia_are.llm import request_seed
from sotopia_are.storage import EpisodeStatus, connect
from sotopia_are.testing import LocalLLMServer


def test_cli_run_spec_file_with_a_model_stores_and_scores(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = conversation_rule(BAKERY)
    spec = SCENARIOS / "bakery_negotiation.json"
    args = ("run", spec, "--model", MODEL, "--api-base", llm_server.url, "--max-turns", "4")
    result = invoke(*args, "--agent-model", f"Teo Alvarez={MODEL}", "--tag", "t1")
    assert result.exit_code == 0, result.output
    assert result.stdout.count('said: "Let us meet halfway."') == 4
    assert (
        "rubric sotopia_eval" in result.stdout and "reached the maximum of 4 turns" in result.stdout
    )
    with connect() as store:
        (episode,) = store.list_episodes(tag="t1", model=MODEL)
        assert episode.status is EpisodeStatus.COMPLETE and episode.event_count == 4
        assert episode.scenario_id == "bakery-negotiation"
        assert set(episode.scores) == set(BAKERY) and episode.usage["calls"] == 5


def test_cli_run_from_stored_profiles(redis_url: str, llm_server: LocalLLMServer) -> None:
    for kind in ("agents", "environments"):
        imported = invoke("import", EXAMPLES / "profiles" / f"{kind}.jsonl")
        assert imported.exit_code == 0, imported.output
    llm_server.rule = conversation_rule(BAKERY)
    result = invoke(
        "run", "--env-id", "bakery-negotiation", "--agent-ids", "mara-quinn,teo-alvarez",
        "--model", MODEL, "--api-base", llm_server.url, "--max-turns", "2", "--no-evaluate",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    prompt = llm_server.chat_requests[0].messages[1]["content"]
    assert "Mara Quinn is a 47-year-old woman baker." in prompt


def test_cli_run_without_a_model_says_what_to_pass(redis_url: str) -> None:
    result = invoke("run", SCENARIOS / "bakery_negotiation.json", env={"SOTOPIA_ARE_MODEL": ""})
    assert result.exit_code == 1
    assert "no model for Mara Quinn, Teo Alvarez. Pass --model MODEL" in result.stderr
    assert "Traceback" not in result.output


def test_cli_run_unknown_agent_in_agent_model(redis_url: str) -> None:
    result = invoke(
        "run", SCENARIOS / "bakery_negotiation.json", "--model", MODEL,
        "--agent-model", "Nobody=openai/x",
    )  # fmt: skip
    assert result.exit_code == 1
    assert "unknown agent 'Nobody' (agents: Mara Quinn, Teo Alvarez)" in result.stderr


def test_cli_run_sends_and_records_the_sampling_of_agents_and_judge(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = conversation_rule(BAKERY)
    result = invoke(
        "run", SCENARIOS / "bakery_negotiation.json", "--model", MODEL, "--api-base",
        llm_server.url, "--max-turns", "2", "--tag", "sampled", "--sampling",
        "temperature=0.7,top_p=0.9,seed=11,presence_penalty=0.5", "--judge-sampling", "seed=3",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    agent_requests = [r.body for r in llm_server.chat_requests[:-1]]
    judge_request = llm_server.chat_requests[-1].body
    assert agent_requests and all(
        (b["temperature"], b["top_p"], b["presence_penalty"]) == (0.7, 0.9, 0.5)
        for b in agent_requests
    )
    # Each request's seed is drawn from the study's seed, the episode's, the agent, the turn.
    assert [b["seed"] for b in agent_requests] == [
        request_seed(11, "agent", 0, BAKERY[turn % 2], turn) for turn in range(2)
    ]
    # The judge keeps its default temperature 0 under the seed it was given.
    assert judge_request["temperature"] == 0
    assert judge_request["seed"] == request_seed(3, "judge", 0, 1)
    assert "top_p" not in judge_request
    with connect() as store:
        (episode_id,) = store.episode_ids(tag="sampled")
        record = store.load(episode_id)
    assert {str(s) for s in record.agent_sampling.values()} == {
        "temperature=0.7,top_p=0.9,seed=11,presence_penalty=0.5"
    }
    assert record.verdict is not None and str(record.verdict.sampling) == "temperature=0.0,seed=3"
    assert [call.params["seed"] for call in record.calls] == [b["seed"] for b in agent_requests]


def test_cli_run_refuses_a_bad_sampling_setting(redis_url: str) -> None:
    spec = SCENARIOS / "bakery_negotiation.json"
    result = invoke("run", spec, "--model", MODEL, "--sampling", "temperature=hot")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "error: --sampling (or $SOTOPIA_ARE_SAMPLING) 'temperature=hot'"
    )
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("option", "variable"),
    [("--sampling", "SOTOPIA_ARE_SAMPLING"), ("--judge-sampling", "SOTOPIA_ARE_JUDGE_SAMPLING")],
)
def test_cli_an_unknown_sampling_key_from_a_flag_or_its_variable_names_the_nearest_one(
    redis_url: str, llm_server: LocalLLMServer, option: str, variable: str
) -> None:
    args = ("run", SCENARIOS / "bakery_negotiation.json", "--model", MODEL, "--api-base",
            llm_server.url, "--max-turns", "2", "--tag", "typo")  # fmt: skip
    for result in (
        invoke(*args, option, "temprature=0.7"),
        invoke(*args, env={variable: "temprature=0.7"}),
    ):
        assert result.exit_code == 1, result.output
        assert "unknown sampling setting 'temprature': did you mean 'temperature'?" in (
            result.stderr
        )
        assert f"${variable}" in result.stderr and "Traceback" not in result.output
    assert llm_server.requests == []  # nothing was sent
    with connect() as store:
        assert store.episode_ids(tag="typo") == []  # nothing was stored


def test_cli_a_provider_parameter_is_sent_when_marked_extra(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = conversation_rule(BAKERY)
    result = invoke(
        "run", SCENARIOS / "bakery_negotiation.json", "--model", MODEL, "--api-base",
        llm_server.url, "--max-turns", "1", "--no-evaluate", "--sampling",
        "top_k=20,extra.reasoning_effort=low",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [sent] = [r.body for r in llm_server.chat_requests]  # not the preflight's
    assert (sent["top_k"], sent["reasoning_effort"]) == (20, "low")


def test_cli_run_an_example_file_twice_gives_two_episodes_of_its_scenario(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = conversation_rule(BAKERY)
    args = ("run", SCENARIOS / "bakery_negotiation.json", "--model", MODEL, "--api-base",
            llm_server.url, "--max-turns", "1", "--no-evaluate", "-q", "--tag", "t2")  # fmt: skip
    for _ in range(2):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        assert "stored as bakery-negotiation-" in result.stdout
    with connect() as store:
        episodes = store.list_episodes(tag="t2")
    assert len({e.pk for e in episodes}) == 2
    assert all(e.scenario_id == "bakery-negotiation" for e in episodes)
