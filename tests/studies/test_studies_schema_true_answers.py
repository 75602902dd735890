"""Episodes against a server that answers random instances of the schema we send.

A server enforcing the schema (llama.cpp, vLLM, OpenAI's strict mode) may answer any of
them; before every schema-true answer was accepted, 10 of 10 such garden-committee
episodes failed. Now every episode completes and its verdict is accepted, through
litellm's real HTTP path and a real (embedded) Redis.
"""

from pathlib import Path

import pytest

import sotopia_are as sa
from sotopia_are.storage import EpisodeStore
from sotopia_are.testing import LocalLLMServer, random_schema_rule

MODEL = "openai/test-model"
GARDEN = Path(__file__).parents[2] / "examples" / "scenarios" / "garden_committee.json"


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_every_episode_completes_and_is_rated(
    llm_server: LocalLLMServer, store: EpisodeStore, seed: int
) -> None:
    llm_server.rule = random_schema_rule(seed)
    spec = sa.EpisodeSpec.model_validate_json(GARDEN.read_text(encoding="utf-8"))
    spec = spec.model_copy(update={"episode_id": f"garden-random-{seed}"})
    assert len(spec.agent_names) == 3
    config = sa.LLMConfig(api_base=llm_server.url)
    judge = sa.LLMJudge(MODEL, config=config)
    record = await sa.arun(spec, models=MODEL, judge=judge, store=store, config=config)

    assert record.status is sa.EpisodeStatus.COMPLETE and not record.failed_or_unrated
    [verdict] = record.verdicts
    assert verdict.rated and not verdict.evaluation.failures
    assert set(record.scores) == set(spec.agent_names)
    # Every answer, the agents' and the judge's, was accepted as it came.
    calls = [*record.calls, *verdict.evaluation.calls]
    assert calls and all(len(call.attempts) == 1 for call in calls)
    assert store.load(record.episode_id) == record


async def test_the_odd_forms_were_met_and_noted(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    """The episodes above prove something only if the odd answers came up: an argument
    on leave or none, speech that would not read back, a repeated recipient."""
    notes: list[str] = []
    for seed in range(5, 9):
        llm_server.rule = random_schema_rule(seed)
        spec = sa.EpisodeSpec.model_validate_json(GARDEN.read_text(encoding="utf-8"))
        spec = spec.model_copy(update={"episode_id": f"garden-odd-{seed}"})
        config = sa.LLMConfig(api_base=llm_server.url)
        record = await sa.arun(spec, models=MODEL, store=store, config=config)
        assert record.status is sa.EpisodeStatus.COMPLETE
        notes += [note for call in record.calls for a in call.attempts for note in a.normalized]
    assert any(note.startswith("dropped the argument") for note in notes)
    assert any("lines as one line" in note for note in notes)
    assert any("listed again, once" in note for note in notes)
