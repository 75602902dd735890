"""`sotopia-are evaluate`: a script file and a stored episode, judged via the local server."""

from pathlib import Path

from cli_support import MODEL, SCENARIOS, SCRIPTS, conversation_rule, invoke

from sotopia_are.evaluation import GOAL_ONLY
from sotopia_are.storage import connect
from sotopia_are.testing import LocalLLMServer

GARDEN = ["Ines Okafor", "Benedikt Müller-Roth", "Jo Ng"]
TRANSCRIPTS = Path(__file__).parents[1] / "data" / "transcripts"
# A real Sotopia transcript: its context preamble, then seven turns.
VACATION = TRANSCRIPTS / "he_01H7VM65KGGY7842XGE5A7PEK1.txt"
VACATIONERS = ["Sasha Ramirez", "Hendrick Heinz"]


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
    assert "Scores from judge openai/test-model, rubric goal_only" in result.stdout
    assert "2 model calls" in result.stdout and len(llm_server.chat_requests) == 2
    # The judge is omniscient: the private action reached it, marked.
    assert "[private to ['Ines Okafor']]" in llm_server.chat_requests[0].messages[1]["content"]


def test_cli_evaluate_a_script_needs_its_context(redis_url: str) -> None:
    # Its preamble names the scenario and participants but no goals.
    result = invoke("evaluate", "--script", SCRIPTS / "garden_committee.txt", "--model", MODEL)
    assert result.exit_code == 1 and "pass --spec FILE" in result.stderr
    assert "line 2: the context gives no goal for Ines Okafor" in result.stderr
    # No preamble at all.
    result = invoke("evaluate", "--script", SCRIPTS / "flat_share_chores.txt", "--model", MODEL)
    assert result.exit_code == 1, result.output
    assert "has no context before its first turn" in result.stderr
    assert "(or pass --spec FILE)" in result.stderr


def test_cli_evaluate_a_transcript_by_its_own_context(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = conversation_rule(VACATIONERS, GOAL_ONLY)
    result = invoke(
        "evaluate", "--script", VACATION, "--evaluator-model", MODEL,
        "--api-base", llm_server.url, "--rubric", "goal_only",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert 'Hendrick Heinz said: "Thank you for your concern, Sasha.' in result.stdout
    assert "Scores from judge openai/test-model, rubric goal_only" in result.stdout
    assert len(llm_server.chat_requests) == 1
    # The judge got the scenario and goals of the preamble.
    prompt = "\n".join(m["content"] for m in llm_server.chat_requests[0].messages)
    assert "Two people in a romantic relationship are on a vacation" in prompt
    assert "Sleep in a separate bed to get a good night's sleep" in prompt


def test_cli_evaluate_agents_must_match_the_scripts_context(redis_url: str) -> None:
    result = invoke(
        "evaluate", "--script", VACATION, "--agents", "Hendrick Heinz,Sasha Ramirez",
        "--model", MODEL,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "line 4: the context names the participants Sasha Ramirez and Hendrick" in (
        result.stderr
    )


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
    assert f"stored the verdict with {episode_id} (1 verdicts in all)" in result.stdout
    with connect() as store:
        stored = store.get_episode(episode_id)
        assert stored.scores["Jo Ng"] == {"goal": 5.0, "overall_score": 5.0}
        assert stored.usage["calls"] == 1
        # The judge's call is in its verdict, not among the agents' calls.
        record = store.load(episode_id)
        assert record.calls == () and record.verdict is not None
        assert len(record.verdict.evaluation.calls) == 1
    listed = invoke("list", "--tag", "demo", "--agent", "Jo Ng")
    assert "Ines 5.0" in listed.stdout
    # The same judge again is refused (nothing lost); another rubric adds a verdict.
    args = ("evaluate", episode_id, "--model", MODEL, "--api-base", llm_server.url)
    again = invoke(*args, "--rubric", "goal_only")
    assert again.exit_code == 1 and "already has a verdict of" in again.stderr
    llm_server.rule = conversation_rule(GARDEN)
    second = invoke(*args, "--rubric", "sotopia_eval")
    assert second.exit_code == 0, second.output
    assert "(2 verdicts in all)" in second.stdout
    llm_server.rule = conversation_rule(GARDEN, GOAL_ONLY)
    replaced = invoke(*args, "--rubric", "goal_only", "--replace")
    assert replaced.exit_code == 0 and "(2 verdicts in all)" in replaced.stdout
    with connect() as store:
        rubrics = [v.rubric for v in store.load(episode_id).verdicts]
    assert rubrics == ["sotopia_eval", "goal_only"]
