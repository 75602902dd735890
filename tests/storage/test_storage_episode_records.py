"""Episode records in the store: save and load give back the same value on both Redis
servers, and episodes stored in the older layout load as records and take new verdicts."""

import json
from pathlib import Path

import pytest

from sotopia_are.record import RECORD_VERSION, load_record
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import EpisodeExistsError, EpisodeLog, EpisodeStateError, EpisodeStore

LEGACY = Path(__file__).parents[1] / "data" / "legacy" / "episodes-v0.jsonl"


def test_save_then_load_gives_the_same_record(store: EpisodeStore) -> None:
    for line in LEGACY.read_text(encoding="utf-8").splitlines():
        record = load_record(line)
        store.save_record(record)
        assert store.load(record.episode_id) == record
        with pytest.raises(EpisodeExistsError):
            store.save_record(record)
        assert store.get_episode(record.episode_id).scores == record.scores


def test_an_episode_stored_in_the_older_layout_loads_and_takes_a_second_verdict(
    store: EpisodeStore,
) -> None:
    lines = LEGACY.read_text(encoding="utf-8").splitlines()
    # Stored as an older sotopia_are stored it: the EpisodeLog with its streams.
    document = json.loads(lines[2])
    events = [ExportedCompletedEvent.model_validate(e) for e in document.pop("events")]
    calls = document.pop("calls")
    episode_id = store.restore_episode(EpisodeLog.from_document(document), events, calls).pk
    assert store.get_episode(episode_id).record_version == 0
    old = store.load(episode_id)
    assert old == load_record(lines[2])
    [verdict] = old.verdicts
    second = verdict.model_copy(update={"judge_model": "openai/second"})
    both = store.add_verdict(episode_id, second)
    # Written whole in the current layout: the old judge's calls now live in its verdict.
    assert store.get_episode(episode_id).record_version == RECORD_VERSION
    assert store.load(episode_id) == both == old.with_verdict(second)
    assert len(store.read_calls(episode_id)) == len(old.calls) == 4


def test_only_a_complete_episode_takes_a_verdict(store: EpisodeStore) -> None:
    lines = LEGACY.read_text(encoding="utf-8").splitlines()
    record = load_record(lines[2])
    running = record.model_copy(
        update={"episode_id": "still-running", "status": EpisodeStatus.RUNNING}
    )
    store.save_record(running)
    with pytest.raises(EpisodeStateError, match="running, not complete"):
        store.add_verdict("still-running", record.verdicts[0])
    assert store.load("still-running") == running
