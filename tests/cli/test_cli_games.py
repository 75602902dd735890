"""Games on the command line, against the local server playing the offline stand-in:
``run`` plays a game to its end, stores it and prints the outcome; ``show --as`` a
villager has no werewolf night chat; ``export``/``import`` round-trip a game (JSONL and ARE
JSON) and its outcome verdict is computed again equal; ``batch`` of a game file finishes
with outcome verdicts; ``benchmark --specs`` on the bargaining game prints win rates and
mean payoffs with intervals per model and role."""

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cli_support import EXAMPLES, MODEL, invoke

from sotopia_are.games import deal_roles, outcome_verdict
from sotopia_are.storage import EpisodeStatus, connect
from sotopia_are.testing import LocalLLMServer, ReplyLike, play_rule

GAMES = EXAMPLES / "games"
SECRET = "the wolves meet by the old mill"


def whispering_wolves(body: Mapping[str, Any]) -> ReplyLike:
    """The stand-in, but a werewolf's night chat says :data:`SECRET`."""
    if 'in the phase "night-chat"' in body["messages"][-1]["content"]:
        return json.dumps({"move": "say", "argument": SECRET})
    return play_rule(body)


def stored_id(output: str) -> str:
    found = re.search(r"stored as (\S+)", output)
    assert found, output
    return found.group(1)


def test_cli_run_plays_a_game_to_its_end_stores_it_and_show_as_a_villager_hides_the_night(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = whispering_wolves
    args = ("run", GAMES / "werewolf.json", "--model", MODEL, "--api-base", llm_server.url)
    result = invoke(*args, "--quiet")
    assert result.exit_code == 0, result.output
    assert re.search(r"outcome: winners: (village|werewolves|nobody) \(", result.stdout)
    episode_id = stored_id(result.stdout)
    with connect() as store:
        record = store.load(episode_id)
    assert record.status is EpisodeStatus.COMPLETE
    roles = deal_roles(record.spec)
    for name, role in roles.items():
        assert re.search(
            rf"  {re.escape(name)}: {role} \(\w+\), (won|lost), payoff -?\d+", result.stdout
        )
    assert [v.judge_model for v in record.verdicts] == ["rules", MODEL]

    shown = invoke("show", episode_id)
    assert shown.exit_code == 0 and SECRET in shown.stdout
    assert "judge: rules (rubric game-outcome, outcome@1)" in shown.stdout
    # A werewolf that said it sees it (the other may have been voted out by then).
    wolf = next(e.sender for e in record.entries if e.move and e.move.argument == SECRET)
    assert roles[wolf] == "werewolf"
    assert SECRET in invoke("show", episode_id, "--as", wolf).stdout
    villagers = [name for name, role in roles.items() if role != "werewolf"]
    for villager in villagers:
        seen = invoke("show", episode_id, "--as", villager)
        assert seen.exit_code == 0 and f"as {villager} saw it" in seen.stdout
        assert SECRET not in seen.stdout


def test_cli_export_import_round_trips_a_game_and_its_outcome_verdict(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = play_rule
    args = ("run", GAMES / "bargaining.json", "--model", MODEL, "--api-base", llm_server.url)
    played = invoke(*args, "--quiet", "--no-evaluate")
    assert played.exit_code == 0, played.output
    episode_id = stored_id(played.stdout)
    with connect() as store:
        before = store.load(episode_id)
    assert [v.key for v in before.verdicts] == ["rules | game-outcome | outcome@1"]
    jsonl, are = tmp_path / "games.jsonl", tmp_path / "game.json"
    assert invoke("export", episode_id, "-o", jsonl).exit_code == 0
    assert invoke("export", episode_id, "--format", "are", "-o", are).exit_code == 0
    for exported in (jsonl, are):
        with connect() as store:
            store.client.flushdb()
        imported = invoke("import", exported)
        assert imported.exit_code == 0, imported.output
        with connect() as store:
            after = store.load(episode_id)
        if exported == jsonl:
            assert after == before
        assert after.verdicts == before.verdicts and after.spec == before.spec
        assert outcome_verdict(after) == before.verdicts[0]


def test_cli_batch_of_a_game_file_finishes_with_outcome_verdicts(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = play_rule
    result = invoke(
        "batch", GAMES / "werewolf.json", "-n", "3", "--model", MODEL, "--api-base",
        llm_server.url, "--tag", "wolves", "--workers", "1", "--no-evaluate",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with connect() as store:
        records = [store.load(pk) for pk in store.episode_ids(tag="wolves")]
    assert len(records) == 3
    for record in records:
        assert record.status is EpisodeStatus.COMPLETE
        assert record.verdict_of("rules") is not None and record.scores.judge_model == "rules"


def test_cli_benchmark_of_bargaining_prints_win_rates_and_payoffs_per_model_and_role(
    redis_url: str, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = play_rule
    result = invoke(
        "benchmark", "--specs", GAMES / "bargaining.json", "--model", "openai/a", "--model",
        "openai/b", "--partner", MODEL, "--api-base", llm_server.url, "--seeds", "2",
        "--workers", "1", "--tag", "haggle", "-o", tmp_path / "report",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "win rate and mean payoff per role" in out
    cell = r"-?\d+\.\d\d \[-?\d+\.\d\d,\s*-?\d+\.\d\d\]"
    for model in ("openai/a", "openai/b"):
        for role in ("every role", "buyer", "seller"):
            row = rf"{re.escape(model)} vs.*?{role}\s*│\s*\d+\s*│\s*{cell}\s*│\s*-?\d+\.\d\d"
            assert re.search(row, out, re.S), (model, role, out)
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert {(g["model"], g["role"]) for g in report["games"]} == {
        (m, r) for m in ("openai/a", "openai/b") for r in ("", "buyer", "seller")
    }
    # Conversations need a judge's model; games do not.
    talk = invoke(
        "benchmark", "--specs", EXAMPLES / "scenarios" / "bakery_negotiation.json", "--model",
        "openai/a", "--partner", MODEL, "--api-base", llm_server.url,
    )  # fmt: skip
    assert talk.exit_code == 1 and "--judge-model" in talk.stderr
