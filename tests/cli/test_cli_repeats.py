"""Repeats on the command line: ``batch -n`` and ``benchmark --seeds`` with a study seed
give distinct episodes on the stand-in, and the same batch under a fresh tag sends the
same requests (as recorded in each call)."""

from pathlib import Path

from cli_support import MODEL, SCENARIOS, invoke

from sotopia_are.record import EpisodeRecord
from sotopia_are.storage import connect
from sotopia_are.testing import LocalLLMServer, play_rule

SUBSET = Path(__file__).parents[1] / "data" / "sotopia_subset"


def stored(tag: str) -> list[EpisodeRecord]:
    with connect() as store:
        records = [store.load(pk) for pk in store.episode_ids(tag=tag)]
    return sorted(records, key=lambda record: (record.scenario_id, record.spec.seed))


def test_cli_batch_repeats_differ_and_a_fresh_tag_sends_the_same_requests(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = play_rule
    for tag in ("first", "second"):
        result = invoke(
            "batch", SCENARIOS / "bakery_negotiation.json", "-n", "4", "--max-turns", "4",
            "--model", MODEL, "--api-base", llm_server.url, "--tag", tag, "--workers", "1",
            "--sampling", "temperature=0.7,seed=3",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    first, second = stored("first"), stored("second")
    assert len({record.transcript() for record in first}) == 4
    sent = [[(c.messages, c.params) for c in record.calls] for record in first]
    assert [[(c.messages, c.params) for c in record.calls] for record in second] == sent
    judged = [[c.params for c in r.verdicts[0].evaluation.calls] for r in first]
    assert [[c.params for c in r.verdicts[0].evaluation.calls] for r in second] == judged


def test_cli_benchmark_seeds_give_distinct_episodes(
    redis_url: str, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = play_rule
    for name, kind in [("agent_profiles", "agents"), ("environment_profiles", "environments")]:
        imported = invoke("import", SUBSET / f"{name}.jsonl", "--kind", kind)
        assert imported.exit_code == 0, imported.output
    result = invoke(
        "benchmark", "--tasks", SUBSET / "env_agent_combos.jsonl", "--sample", "1",
        "-m", "openai/model-a", "--partner", "openai/partner", "--judge-model",
        "openai/judge", "--api-base", llm_server.url, "--max-turns", "3", "--tag", "bench",
        "--workers", "1", "--seeds", "2", "--sampling", "seed=5",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    records = stored("bench")
    assert len(records) == 4  # two roles, two seeds each
    for role in {record.scenario_id for record in records}:
        played = [r.transcript() for r in records if r.scenario_id == role]
        assert len(set(played)) == 2, role
