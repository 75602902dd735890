"""Listing and exporting at scale: listing reads each episode's listed summary (not its
record) and gives what the whole records give, on stores written before summaries
existed too; exporting reads episodes a batch at a time as it writes them."""

import io
import json
from pathlib import Path

import pytest

from sotopia_are.record import EpisodeRecord, load_record
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import (
    EpisodeLog,
    EpisodeStore,
    RecordNotFoundError,
    UnreadableRecordError,
    export_episodes,
)
from sotopia_are.storage.episode_layout import summary_of
from sotopia_are.storage.keys import SUMMARY_FIELD
from sotopia_are.studies import ExportFormat, export_to

LEGACY = Path(__file__).parents[1] / "data" / "legacy"


def _records() -> list[EpisodeRecord]:
    return [
        load_record(line)
        for name in ("episodes-v0.jsonl", "episodes-v1.jsonl")
        for line in (LEGACY / name).read_text(encoding="utf-8").splitlines()
    ]


def _mixed_store(store: EpisodeStore) -> list[str]:
    """Episodes of every kind a listing shows: rated by one or two judges, unrated,
    failed, one in the older layout (record version 0), under two tags."""
    ids = []
    for number, record in enumerate(_records()):
        copy = record.model_copy(
            update={"episode_id": f"mixed-{number}", "tag": f"tag-{number % 2}"}
        )
        store.save_record(copy)
        ids.append(copy.episode_id)
        if copy.verdicts and number > 2:  # one rated by one judge, one by two
            second = copy.verdicts[0].model_copy(update={"judge_model": "openai/second"})
            store.add_verdict(copy.episode_id, second)
    failed = _records()[0].model_copy(
        update={"episode_id": "mixed-failed", "status": EpisodeStatus.FAILED, "reason": "boom"}
    )
    store.save_record(failed)
    ids.append(failed.episode_id)
    document = json.loads((LEGACY / "episodes-v0.jsonl").read_text().splitlines()[2])
    events = [ExportedCompletedEvent.model_validate(e) for e in document.pop("events")]
    calls = document.pop("calls")
    document.update(pk="mixed-legacy", tag="tag-0")
    store.restore_episode(EpisodeLog.from_document(document), events, calls)
    assert store.get_episode("mixed-legacy").record_version == 0
    return [*ids, "mixed-legacy"]


WHERE: list[dict[str, str]] = [{}, {"tag": "tag-0"}, {"tag": "tag-1", "status": "complete"}]


def _from_whole_records(store: EpisodeStore, judge: str | None, where: dict[str, str]) -> list:
    return [summary_of(log, judge) for log in store.list_episodes(**where)]  # type: ignore[arg-type]


@pytest.mark.parametrize("judge", [None, "openai/second"])
def test_listing_from_summaries_gives_what_the_whole_records_give(
    store: EpisodeStore, judge: str | None
) -> None:
    ids = _mixed_store(store)
    assert store.episode_ids() == [log.pk for log in store.list_episodes()]
    assert set(store.episode_ids()) == set(ids)
    for where in WHERE:
        expected = _from_whole_records(store, judge, where)
        assert expected, where
        assert store.summaries(judge=judge, **where) == expected  # type: ignore[arg-type]
        assert store.summaries(judge=judge, limit=2, **where) == expected[:2]  # type: ignore[arg-type]
    rated = [s for s in store.summaries(judge=judge) if s.overall]
    assert rated, "the mixed store has rated episodes"


def test_a_store_written_before_listed_summaries_lists_the_same_and_gets_them(
    store: EpisodeStore,
) -> None:
    ids = _mixed_store(store)
    expected = {json.dumps(where): _from_whole_records(store, None, where) for where in WHERE}
    for pk in ids:  # as the store was before listed summaries existed
        store.client.hdel(EpisodeLog.redis_key(pk), SUMMARY_FIELD)
    assert not any(store.client.hexists(EpisodeLog.redis_key(pk), SUMMARY_FIELD) for pk in ids)
    for where in WHERE:
        assert store.summaries(**where) == expected[json.dumps(where)]  # type: ignore[arg-type]
    # The first listing added every summary, so later ones read those.
    assert all(store.client.hexists(EpisodeLog.redis_key(pk), SUMMARY_FIELD) for pk in ids)
    for where in WHERE:
        assert store.summaries(**where) == expected[json.dumps(where)]  # type: ignore[arg-type]
    # The records themselves read back unchanged.
    assert [store.load(pk) for pk in ids] == [
        load_record(r.to_json()) for r in (store.load(pk) for pk in ids)
    ]


def test_a_listed_summary_is_rewritten_with_its_record(store: EpisodeStore) -> None:
    _mixed_store(store)
    record = next(r for r in map(store.load, store.episode_ids()) if r.verdicts)
    before = store.summaries(tag=record.tag)
    again = record.verdicts[0].model_copy(update={"judge_model": "openai/third"})
    store.add_verdict(record.episode_id, again)
    [summary] = [s for s in store.summaries() if s.episode_id == record.episode_id]
    assert summary.judges[-1] == "openai/third" and summary.judge == "openai/third"
    assert summary == summary_of(store.get_episode(record.episode_id))
    assert store.summaries(tag=record.tag) != before


def test_a_listed_summary_of_a_key_holding_another_type_is_reported(store: EpisodeStore) -> None:
    _mixed_store(store)
    store.client.set(EpisodeLog.redis_key("foreign"), "a string")
    store.client.zadd("sotopia_are:index:episode:created", {"foreign": 0.0})
    skipped: list[UnreadableRecordError] = []
    listed = store.summaries(on_unreadable=skipped.append)
    assert "foreign" not in {s.episode_id for s in listed}
    assert [e.key for e in skipped] == [EpisodeLog.redis_key("foreign")]


def _many(store: EpisodeStore, count: int) -> list[str]:
    record = _records()[0]
    ids = [f"many-{number:03d}" for number in range(count)]
    for pk in ids:
        store.save_record(record.model_copy(update={"episode_id": pk, "tag": "many"}))
    return ids


def test_iter_records_gives_what_load_gives_a_batch_at_a_time(store: EpisodeStore) -> None:
    ids = _mixed_store(store)
    assert list(store.iter_records(ids, batch=3)) == [store.load(pk) for pk in ids]
    # Lazy: episodes deleted after the first batch was read are not found when reached.
    records = store.iter_records(ids, batch=2)
    assert next(records) == store.load(ids[0])
    assert store.delete_episode(ids[1]) and store.delete_episode(ids[2])
    assert next(records).episode_id == ids[1]  # read with the first batch
    with pytest.raises(RecordNotFoundError, match=ids[2]):
        next(records)


def test_export_writes_each_episode_as_it_reads_it(store: EpisodeStore) -> None:
    """The iterator contract: the export never holds every record. Deleting the last
    episode once the first line is written makes the export miss it, which an export
    that read everything first would not."""
    ids = _many(store, 45)
    expected = [store.load(pk).to_json() for pk in ids]

    class DeletingOut(io.StringIO):
        def write(self, text: str) -> int:
            if not self.getvalue():
                store.delete_episode(ids[-1])
            return super().write(text)

    out = DeletingOut()
    with pytest.raises(RecordNotFoundError, match=ids[-1]):
        export_episodes(store, out, ids)
    assert out.getvalue().splitlines() == expected[:-1]
    whole = io.StringIO()
    assert export_episodes(store, whole, ids[:-1]) == 44
    assert whole.getvalue().splitlines() == expected[:-1]


def test_export_to_a_file_is_whole_or_nothing(store: EpisodeStore, tmp_path: Path) -> None:
    ids = _many(store, 25)
    target = tmp_path / "out.jsonl"
    assert export_to(store, ids, ExportFormat.jsonl, target) == 25
    assert target.read_text().splitlines() == [store.load(pk).to_json() for pk in ids]
    store.delete_episode(ids[-1])
    with pytest.raises(RecordNotFoundError):
        export_to(store, ids, ExportFormat.jsonl, tmp_path / "partial.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
