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
        "Scores (sotopia_eval" in result.stdout
        and "reached the maximum of 4 turns" in result.stdout
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
    assert (
        "Mara Quinn is a 47-year-old woman baker." in llm_server.requests[0].messages[1]["content"]
    )


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
