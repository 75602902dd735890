"""Episode records in the store: save and load give back the same value on both Redis
servers, and episodes stored in the older layout load as records and take new verdicts."""

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from sotopia_are.record import RECORD_VERSION, EpisodeRecord, Verdict, load_record
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import (
    EpisodeExistsError,
    EpisodeLog,
    EpisodeStateError,
    EpisodeStore,
    usage_summary,
)

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


def _unrated_and_its_verdict(store: EpisodeStore) -> tuple[EpisodeRecord, Verdict]:
    """A rated record with model calls, stored in the current layout without its verdict."""
    record = load_record(LEGACY.read_text(encoding="utf-8").splitlines()[2])
    assert record.calls and record.verdicts
    unrated = record.model_copy(update={"verdicts": ()})
    store.save_record(unrated)
    return unrated, record.verdicts[0]


def test_a_verdict_given_the_record_in_hand_stores_what_load_gives(store: EpisodeStore) -> None:
    unrated, verdict = _unrated_and_its_verdict(store)
    rated = store.add_verdict(unrated.episode_id, verdict, stored=unrated)
    assert rated == unrated.with_verdict(verdict) == store.load(unrated.episode_id)
    assert store.get_episode(unrated.episode_id).scores == rated.scores


@pytest.mark.parametrize(
    "stale",
    [
        lambda r: r.model_copy(update={"calls": r.calls[:-1]}),
        lambda r: r.model_copy(update={"events": r.events[:-1]}),
        lambda r: r.model_copy(update={"tag": "elsewhere"}),
        lambda r: r.model_copy(update={"spec": r.spec.model_copy(update={"max_turns": 3})}),
    ],
    ids=["a-call-missing", "an-event-missing", "another-tag", "another-spec"],
)
def test_a_verdict_given_a_record_that_is_not_the_stored_one_rates_the_stored_one(
    store: EpisodeStore, stale: Callable[[EpisodeRecord], EpisodeRecord]
) -> None:
    unrated, verdict = _unrated_and_its_verdict(store)
    rated = store.add_verdict(unrated.episode_id, verdict, stored=stale(unrated))
    # The caller's copy is only a shortcut: what is stored is what gets rated.
    assert rated == unrated.with_verdict(verdict) == store.load(unrated.episode_id)
    assert store.get_episode(unrated.episode_id).usage == usage_summary(rated.usage)
