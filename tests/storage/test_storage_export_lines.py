"""Export lines joined from the stored texts are the records' JSON byte for byte; whatever
is not stored in that form (older records, running episodes, edited fields, unmarked
entries, keys of another type) is exported the full way, with the same errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_storage_listing_scale import _mixed_store, _records
from test_storage_record_laws import records

import sotopia_are as sa
from sotopia_are.llm import LLMCall
from sotopia_are.record import EpisodeRecord
from sotopia_are.storage import (
    EpisodeLog,
    EpisodeStore,
    RecordNotFoundError,
    UnreadableRecordError,
    connect,
)
from sotopia_are.storage.exported import FORM_FIELD, export_form, export_line
from sotopia_are.storage.keys import EXPORTED_FIELD, episode_calls_key, episode_events_key
from sotopia_are.storage.store.round_trip import round_trip
from sotopia_are.testing import LocalLLMServer, schema_rule

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
NUMBER = st.integers(-(2**70), 2**70) | st.floats(allow_nan=True, allow_infinity=True)
JSON = st.recursive(
    st.none() | st.booleans() | NUMBER | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
CALLS = st.lists(
    st.builds(
        LLMCall,
        model=TEXT,
        template=TEXT,
        messages=st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": TEXT})),
        params=st.dictionaries(TEXT, JSON, max_size=3),
        raw_text=st.none() | TEXT,
        parsed=JSON,
        prompt_tokens=st.none() | st.integers(0, 10**9),
        cost_usd=st.none() | st.floats(0, 1e-3) | st.integers(0, 3),
        latency_s=st.floats(0, 1e6) | st.integers(0, 10),
    ),
    max_size=3,
)


def _joined(store: EpisodeStore, pk: str) -> str | None:
    """The line joined from the stored texts of ``pk``, or None if it is exported the full
    way."""
    commands = [
        ("HGETALL", EpisodeLog.redis_key(pk)),
        ("XRANGE", episode_events_key(pk), "-", "+"),
        ("XRANGE", episode_calls_key(pk), "-", "+"),
    ]
    row, events, calls = round_trip(store.client, commands, decode=False)
    line = export_line(row, events, calls, entry_names=("event", "call"))
    return None if line is None else line.decode()


def _lines(store: EpisodeStore, ids: list[str], batch: int = 20) -> list[str]:
    """What exporting ``ids`` writes, a line each."""
    return [line.decode() for line in store.iter_export_lines(ids, batch=batch)]


def _full(store: EpisodeStore, ids: list[str]) -> list[str]:
    return [record.to_json() for record in store.iter_records(ids)]


@given(records(), CALLS)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_joined_line_is_the_record_json(
    store: EpisodeStore, record: EpisodeRecord, calls: list[LLMCall]
) -> None:
    store.client.flushdb()
    record = record.model_copy(update={"calls": tuple(calls)})
    store.save_record(record)
    # What exporting the full way gives: the record read back (with the keys of what the
    # store keeps as canonical JSON, such as sampling extras, sorted).
    full = _full(store, [record.episode_id])
    assert full == [store.load(record.episode_id).to_json()]
    line = _joined(store, record.episode_id)
    if record.status is sa.EpisodeStatus.RUNNING:
        assert line is None  # its streams still grow: the full way
    else:
        assert [line] == full
    assert _lines(store, [record.episode_id]) == full


@pytest.fixture
def played(storage_data_dir: str, llm_server: LocalLLMServer) -> Iterator[EpisodeStore]:
    """A store of episodes played and judged against the test server (events appended
    as they happen, calls written at the end, verdicts added), one of them rated twice."""
    llm_server.rule = schema_rule
    config = sa.LLMConfig(api_base=llm_server.url)
    judge = sa.LLMJudge("openai/test-model", sa.GOAL_ONLY, config=config)
    with connect() as store:
        for number in range(3):
            spec = sa.EpisodeSpec(
                episode_id=f"played-{number}",
                scenario="A bakery before closing: ünïcode, “quotes” and\nnewlines.",
                agent_names=["Mara Quinn", "Teo Alvarez"],
                agent_backgrounds=["the baker", "a café owner"],
                agent_goals=["sell the bread", "buy it cheap"],
                max_turns=3,
            )
            sa.run(spec, models="openai/test-model", config=config, judge=judge, store=store)
        second = sa.LLMJudge("openai/other", sa.GOAL_ONLY, config=config)
        sa.rate(store.load("played-0"), second, store=store)
        yield store


def test_played_episodes_are_joined_as_their_records(played: EpisodeStore) -> None:
    ids = played.episode_ids()
    assert len(ids) == 3
    full = _full(played, ids)
    assert [_joined(played, pk) for pk in ids] == full
    assert _lines(played, ids, batch=2) == full
    assert len(json.loads(full[0])["verdicts"]) == 2
    assert all(json.loads(line)["calls"] for line in full)


def test_older_records_and_running_episodes_are_exported_the_full_way(
    store: EpisodeStore,
) -> None:
    ids = _mixed_store(store)
    full = _full(store, ids)
    assert _lines(store, ids, batch=3) == full
    # Written by this store: joined; the older layout (version 0) reads its streams.
    assert _joined(store, "mixed-legacy") is None
    assert [_joined(store, pk) for pk in ids if pk != "mixed-legacy"] == full[:-1]
    # As an older version left them: no export parts, no marks.
    for pk in ids:
        store.client.hdel(EpisodeLog.redis_key(pk), EXPORTED_FIELD)
    assert [_joined(store, pk) for pk in ids] == [None] * len(ids)
    assert _lines(store, ids) == full
    running = _records()[0].model_copy(
        update={"episode_id": "running", "status": sa.EpisodeStatus.RUNNING, "verdicts": ()}
    )
    store.save_record(running)
    assert _joined(store, "running") is None
    assert _lines(store, ["running"]) == [running.to_json()]


def _one(store: EpisodeStore) -> EpisodeRecord:
    record = _records()[-1].model_copy(update={"episode_id": "one"})
    store.save_record(record)
    record = store.load("one")  # its verdict's dimensions put in rubric order
    assert _joined(store, "one") == record.to_json()
    return record


def _exported(store: EpisodeStore) -> str:
    return "".join(_lines(store, ["one"]))


@pytest.mark.parametrize(
    ("field", "value"),
    [("scenario_id", "edited"), ("tag", "other"), ("verdicts", "[]"), ("spec", '{"a": 1}')],
)
def test_an_edited_field_is_exported_as_the_record_now_reads(
    store: EpisodeStore, field: str, value: str
) -> None:
    _one(store)
    store.client.hset(EpisodeLog.redis_key("one"), field, value)
    assert _joined(store, "one") is None
    try:
        expected: Any = store.load("one").to_json()
    except ValueError as error:  # a spec that is none
        with pytest.raises(type(error), match=str(error)[:40]):
            _exported(store)
        return
    assert _exported(store) == expected


@pytest.mark.parametrize(
    ("field", "value"),
    [("status", "bogus"), ("updated_at", "soon"), ("event_count", "x"), ("record_version", "v")],
)
def test_a_damaged_field_is_the_error_reading_gives(
    store: EpisodeStore, field: str, value: str
) -> None:
    _one(store)
    store.client.hset(EpisodeLog.redis_key("one"), field, value)
    with pytest.raises(UnreadableRecordError, match=field) as read:
        store.load("one")
    with pytest.raises(UnreadableRecordError) as exported:
        _exported(store)
    assert str(exported.value) == str(read.value)


def test_unmarked_entries_and_other_forms_are_exported_the_full_way(
    store: EpisodeStore,
) -> None:
    record = _one(store)
    key = EpisodeLog.redis_key("one")
    # A call stored as a mapping (canonical JSON, not the record's form): no mark.
    call = LLMCall(model="m", template="t", messages=[], latency_s=1e-05, cost_usd=1e16)
    store.append_call("one", call.model_dump(mode="json"))
    assert _joined(store, "one") is None
    with_call = record.model_copy(update={"calls": (*record.calls, call)})
    assert _exported(store) == with_call.to_json() == store.load("one").to_json()
    # The same call as a model is marked, and joined.
    store.save_record(record, replace=True)
    store.append_call("one", call)
    assert _joined(store, "one") == _exported(store) == with_call.to_json()
    # Written by another form (another version of the models): the full way.
    text = store.client.hget(key, EXPORTED_FIELD)
    store.client.hset(key, EXPORTED_FIELD, "0000000000000000" + text[16:])
    assert _joined(store, "one") is None
    assert _exported(store) == with_call.to_json()
    # An event entry of another form.
    store.save_record(record, replace=True)
    [(_, fields)] = store.client.xrange(episode_events_key("one"), count=1)
    assert fields[FORM_FIELD] == export_form()
    store.client.xadd(episode_events_key("one"), {**fields, FORM_FIELD: "older"})
    assert _joined(store, "one") is None
    assert _exported(store) == store.load("one").to_json()


def test_keys_of_another_type_and_missing_episodes_give_the_same_errors(
    store: EpisodeStore,
) -> None:
    _one(store)
    store.client.delete(episode_calls_key("one"))
    store.client.set(episode_calls_key("one"), "a string")
    with pytest.raises(UnreadableRecordError, match="holds a string") as read:
        store.load("one")
    with pytest.raises(UnreadableRecordError) as exported:
        _exported(store)
    assert str(exported.value) == str(read.value)
    with pytest.raises(RecordNotFoundError, match="nope"):
        _lines(store, ["nope"])


def test_a_verdict_added_rewrites_the_export_parts(store: EpisodeStore) -> None:
    record = _one(store)
    verdict = record.verdicts[0].model_copy(update={"judge_model": "openai/second"})
    rated = store.add_verdict("one", verdict)
    assert _joined(store, "one") == rated.to_json() == store.load("one").to_json()
