"""EpisodeRecord as a versioned value: JSON round trips, older layouts migrate, newer
versions are refused."""

import json
from pathlib import Path

import pytest

from sotopia_are.record import RECORD_VERSION, EpisodeRecord, RecordVersionError, load_record
from sotopia_are.social import EpisodeStatus

LEGACY = Path(__file__).parents[1] / "data" / "legacy" / "episodes-v0.jsonl"


def legacy_records() -> list[EpisodeRecord]:
    return [load_record(line) for line in LEGACY.read_text(encoding="utf-8").splitlines()]


def test_records_exported_before_records_existed_still_load() -> None:
    bakery, garden, rated = legacy_records()
    assert bakery.status is EpisodeStatus.COMPLETE and bakery.turns_played == 12
    assert "Teo Alvarez left the conversation" in bakery.transcript()
    assert garden.failed_or_unrated and garden.verdicts == ()
    # Jo's whisper is hidden from Benedikt, read from the migrated events.
    assert "Between us" in garden.transcript("Ines Okafor")
    assert "Between us" not in garden.transcript("Benedikt Müller-Roth")
    # The rated one: its judge's call moved into the verdict, the agents' calls stayed.
    assert [c.scope for c in rated.calls] == [f"{rated.episode_id}/{n}" for n in (
        "Mara Quinn", "Mara Quinn", "Teo Alvarez", "Teo Alvarez")]  # fmt: skip
    [verdict] = rated.verdicts
    assert verdict.judge_model == "openai/test-model" and verdict.rubric == "sotopia_eval"
    assert [c.scope for c in verdict.evaluation.calls] == [f"{rated.episode_id}/judge"]
    assert rated.scores["Mara Quinn"]["goal"] == 5.0 and not rated.failed_or_unrated
    assert rated.usage.calls == 5 and rated.models["Teo Alvarez"] == "openai/test-model"


def test_version_1_records_load_as_version_2_with_sampling_not_recorded() -> None:
    """Records written before sampling was kept (version 1: the main of Step 13)."""
    lines = (LEGACY.parent / "episodes-v1.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line)["version"] == 1 for line in lines)
    records = [load_record(line) for line in lines]
    assert records == legacy_records()
    for record in records:
        assert record.version == RECORD_VERSION and record.agent_sampling == {}
        assert all(v.sampling is None for v in record.verdicts)


def test_json_round_trip_keeps_the_record_and_puts_version_first() -> None:
    for record in legacy_records():
        text = record.to_json()
        assert next(iter(json.loads(text))) == "version"
        assert json.loads(text)["version"] == RECORD_VERSION
        again = load_record(text)
        assert again == record and again.to_json() == text


def test_a_newer_record_is_refused_with_the_fix() -> None:
    document = json.loads(legacy_records()[0].to_json())
    newer = rf"version {RECORD_VERSION + 1} .* Upgrade sotopia_are"
    with pytest.raises(RecordVersionError, match=newer):
        load_record({**document, "version": RECORD_VERSION + 1})


@pytest.mark.parametrize("data", ['{"episode_id": "x"}', "[1, 2]", '{"version": "one"}'])
def test_what_is_not_a_record_is_a_clear_error(data: str) -> None:
    with pytest.raises(ValueError):
        load_record(data)


def test_a_verdict_per_judge() -> None:
    rated = legacy_records()[2]
    [verdict] = rated.verdicts
    with pytest.raises(ValueError, match="already has a verdict of openai/test-model"):
        rated.with_verdict(verdict)
    other = verdict.model_copy(update={"judge_model": "openai/second"})
    both = rated.with_verdict(other)
    assert [v.judge_model for v in both.verdicts] == ["openai/test-model", "openai/second"]
    assert both.verdict == other and rated.verdicts == (verdict,)  # frozen: a new record
    replaced = both.with_verdict(verdict, replace=True)
    assert [v.judge_model for v in replaced.verdicts] == ["openai/second", "openai/test-model"]


def test_a_changed_copy_derives_its_views_again() -> None:
    bakery, garden, _ = legacy_records()
    assert "Teo Alvarez left" in bakery.transcript()  # views now cached on bakery
    swapped = bakery.model_copy(update={"spec": garden.spec, "events": garden.events})
    assert swapped.transcript() == garden.transcript()
