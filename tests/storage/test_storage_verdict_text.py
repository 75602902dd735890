"""A verdict's stored JSON text, written by pydantic-core (which spells some floats
otherwise than ``json.dumps``: ``0.00001`` for ``1e-05``): it parses to the values
``json.dumps`` would have written, either way of taking the step; stores written by
``json.dumps`` still read, take verdicts and export; ``export -> import -> export`` is
stable."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from test_storage_steps import FIRST as LEGACY_VERDICT
from test_storage_steps import RECORDS, Twin, dump, take

from sotopia_are.record import Verdict
from sotopia_are.storage import EpisodeLog, EpisodeStore, export_episodes, import_episodes
from sotopia_are.storage import fields as fields_module
from sotopia_are.storage.fields import dumps_ordered
from sotopia_are.storage.store import index as index_module
from sotopia_are.storage.store import lifecycle as lifecycle_module

FLOATS = [1e-05, 2.3e-06, 5e-324, 1e-300, 0.1, 1e16, 1.5e300, 123456789.125, -0.0]


def _verdict(judge_model: str) -> Verdict:
    """The test record's verdict by ``judge_model``, holding small and large floats in
    its judge's call (its cost, its latency, its parameters)."""
    data: dict[str, Any] = LEGACY_VERDICT.model_dump(mode="json")
    data["judge_model"] = judge_model
    call = data["evaluation"]["calls"][0]
    call["cost_usd"] = 2.3e-06
    call["latency_s"] = 1e-05
    call["params"] = {"floats": FLOATS, "top_p": 1e-05}
    return Verdict.model_validate(data)


FIRST, SECOND = _verdict("openai/judge"), _verdict("openai/second-judge")


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=10,
)


@given(JSON)
def test_an_ordered_text_parses_to_what_json_dumps_writes(value: Any) -> None:
    text = dumps_ordered(value)
    # json.dumps of what each parses to: keys in their order, floats exactly (their
    # repr), NaN as written.
    assert json.dumps(json.loads(text)) == json.dumps(json.loads(json.dumps(value)))


def _values_json_dumps_writes(verdicts: list[Verdict]) -> Any:
    return json.loads(json.dumps([v.model_dump(mode="json") for v in verdicts]))


def _exported(store: EpisodeStore) -> list[str]:
    out = io.StringIO()
    export_episodes(store, out)
    return out.getvalue().splitlines()


def _stable(store: EpisodeStore, other: redis.Redis[str]) -> list[str]:
    """The store's export lines, checked to be the records' JSON and to come out the same
    after importing them into ``other`` (emptied) and exporting again."""
    lines = _exported(store)
    assert lines == [store.load(pk).to_json() for pk in store.episode_ids()]
    other.flushdb()
    again = EpisodeStore(other, location="another store")
    import_episodes(again, lines)
    assert _exported(again) == lines
    return lines


def test_a_verdict_s_text_parses_to_what_json_dumps_writes(
    twins: tuple[redis.Redis[str], redis.Redis[str]],
) -> None:
    fast_client, general_client = twins
    fast, general = Twin(fast_client, general=False), Twin(general_client, general=True)
    for twin in (fast, general):
        take(twin, ("play", "p0", 0))
        twin.store.add_verdict("p0", FIRST, stored=RECORDS["p0"])
    assert dump(fast_client) == dump(general_client)
    text = fast_client.hget(EpisodeLog.redis_key("p0"), "verdicts")
    assert text is not None
    assert json.loads(text) == _values_json_dumps_writes([FIRST])  # floats compared exactly
    assert json.loads(text)[0]["evaluation"]["calls"][0]["params"]["floats"] == FLOATS
    assert fast.store.load("p0").verdicts == (FIRST,)
    lines = _stable(fast.store, general_client)
    assert json.loads(lines[0])["verdicts"][0]["evaluation"]["calls"][0]["cost_usd"] == 2.3e-06


def _dumps_as_json_did(value: Any) -> str:
    """How stores before this one wrote an ordered JSON text."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.fixture
def old_store(
    twins: tuple[redis.Redis[str], redis.Redis[str]], monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[redis.Redis[str], redis.Redis[str]]]:
    """The twins' first server holding an episode and its verdict as a store that wrote
    its ordered texts with ``json.dumps`` left them (export parts included)."""
    client, other = twins
    monkeypatch.setattr(fields_module.AS_ORDERED_JSON_TEXT, "dumps", _dumps_as_json_did)
    monkeypatch.setattr(
        lifecycle_module,
        "verdicts_text",
        lambda _verdicts, value: _dumps_as_json_did(value).encode(),
    )
    monkeypatch.setattr(index_module, "dumps_ordered", _dumps_as_json_did)
    twin = Twin(client, general=False)
    take(twin, ("play", "p0", 0))
    twin.store.add_verdict("p0", FIRST, stored=RECORDS["p0"])
    monkeypatch.undo()
    text = client.hget(EpisodeLog.redis_key("p0"), "verdicts")
    assert text == _dumps_as_json_did([FIRST.model_dump(mode="json")])
    assert "1e-05" in text  # as json.dumps spells it
    yield client, other


def test_an_older_store_s_texts_read_step_and_export(
    old_store: tuple[redis.Redis[str], redis.Redis[str]],
) -> None:
    client, other = old_store
    store = EpisodeStore(client, location="the store")
    record = store.load("p0")
    assert record.verdicts == (FIRST,)
    assert json.loads(client.hget(EpisodeLog.redis_key("p0"), "verdicts") or "") == (
        _values_json_dumps_writes([FIRST])
    )
    # Exported from the stored parts, whose digest is of the texts json.dumps wrote.
    _stable(store, other)
    with_second = store.add_verdict("p0", SECOND, stored=record)
    assert store.load("p0") == with_second
    assert with_second.verdicts == (FIRST, SECOND)
    text = client.hget(EpisodeLog.redis_key("p0"), "verdicts")
    assert json.loads(text or "") == _values_json_dumps_writes([FIRST, SECOND])
    _stable(store, other)
