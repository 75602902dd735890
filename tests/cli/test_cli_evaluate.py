"""`sotopia-are evaluate`: a script file and a stored episode, judged via the local server."""

from pathlib import Path

from cli_support import MODEL, SCENARIOS, SCRIPTS, conversation_rule, invoke

from sotopia_are.evaluation import GOAL_ONLY
from sotopia_are.storage import connect
from sotopia_are.testing import LocalLLMServer

GARDEN = ["Ines Okafor", "Benedikt Müller-Roth", "Jo Ng"]


def test_cli_evaluate_a_script(redis_url: str, llm_server: LocalLLMServer) -> None:
    llm_server.rule = conversation_rule(GARDEN, GOAL_ONLY)
    result = invoke(
        "evaluate", "--script", SCRIPTS / "garden_committee.txt",
        "--spec", SCENARIOS / "garden_committee.json", "--agents", ",".join(GARDEN),
        "--evaluator-model", MODEL, "--api-base", llm_server.url,
        "--rubric", "goal_only", "--samples", "2",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Jo Ng [private to ['Ines Okafor']] said:" in result.stdout
    assert "Scores (goal_only, judge openai/test-model)" in result.stdout
    assert "2 model calls" in result.stdout and len(llm_server.requests) == 2
    # The judge is omniscient: the private action reached it, marked.
    assert "[private to ['Ines Okafor']]" in llm_server.requests[0].messages[1]["content"]


def test_cli_evaluate_a_script_needs_its_context(redis_url: str) -> None:
    result = invoke("evaluate", "--script", SCRIPTS / "garden_committee.txt", "--model", MODEL)
    assert result.exit_code == 1 and "pass --spec FILE" in result.stderr


def test_cli_evaluate_a_stored_episode_stores_the_verdict(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    demo = invoke("demo", "-o", tmp_path / "demo.json", env={"SOTOPIA_ARE_MODEL": ""})
    assert demo.exit_code == 0, demo.output
    with connect() as store:
        episode_id = store.list_episodes(tag="demo", agent="Jo Ng")[0].pk
    llm_server.rule = conversation_rule(GARDEN, GOAL_ONLY)
    result = invoke(
        "evaluate", episode_id, "--model", MODEL, "--api-base", llm_server.url,
        "--rubric", "goal_only",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"stored the evaluation with {episode_id}" in result.stdout
    with connect() as store:
        stored = store.get_episode(episode_id)
        assert stored.scores["Jo Ng"] == {"goal": 5.0, "overall_score": 5.0}
        assert stored.usage["calls"] == 1 and len(store.read_calls(episode_id)) == 1
    listed = invoke("list", "--tag", "demo", "--agent", "Jo Ng")
    assert "Ines 5.0" in listed.stdout
