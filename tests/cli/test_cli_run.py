"""`sotopia-are run`: one LLM episode against the local server, from a spec or profiles."""

from cli_support import BAKERY, EXAMPLES, MODEL, SCENARIOS, conversation_rule, invoke

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
        (b["temperature"], b["top_p"], b["seed"], b["presence_penalty"]) == (0.7, 0.9, 11, 0.5)
        for b in agent_requests
    )
    # The judge keeps its default temperature 0 under the seed it was given.
    assert (judge_request["temperature"], judge_request["seed"]) == (0, 3)
    assert "top_p" not in judge_request
    with connect() as store:
        (episode_id,) = store.episode_ids(tag="sampled")
        record = store.load(episode_id)
    assert {str(s) for s in record.agent_sampling.values()} == {
        "temperature=0.7,top_p=0.9,seed=11,presence_penalty=0.5"
    }
    assert record.verdict is not None and str(record.verdict.sampling) == "temperature=0.0,seed=3"
    assert all(call.params["seed"] == 11 for call in record.calls)


def test_cli_run_refuses_a_bad_sampling_setting(redis_url: str) -> None:
    spec = SCENARIOS / "bakery_negotiation.json"
    result = invoke("run", spec, "--model", MODEL, "--sampling", "temperature=hot")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: --sampling 'temperature=hot'")
    assert "Traceback" not in result.output
