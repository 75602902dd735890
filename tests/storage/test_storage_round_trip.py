"""Commands sent at once on one of the client's connections: each reply as the server
sends it, in order, decoded as the client decodes or not at all, an error reply in its
place (as a pipeline's ``execute(raise_on_error=False)`` gives it) with the connection
still usable after it; and the export's reading of those replies, in RESP2 as in RESP3."""

from __future__ import annotations

from typing import Any

import redis
from test_storage_listing_scale import _records

from sotopia_are.storage import EpisodeLog, EpisodeStore
from sotopia_are.storage.exported import FORM_FIELD, export_form, export_line
from sotopia_are.storage.keys import episode_calls_key, episode_events_key
from sotopia_are.storage.store.round_trip import round_trip


def test_replies_in_order_with_error_replies_in_their_place(store: EpisodeStore) -> None:
    client = store.client
    client.hset("h", mapping={"a": "ü", "b": "2"})
    client.set("s", "text")
    commands = [("HMGET", "h", "a", "b", "c"), ("HGETALL", "s"), ("GET", "s"), ("PING",)]
    replies = round_trip(client, commands)
    pipe = client.pipeline(transaction=False)
    pipe.hmget("h", ["a", "b", "c"])
    pipe.hgetall("s")
    pipe.get("s")
    pipe.ping()
    expected = pipe.execute(raise_on_error=False)
    assert replies[0] == expected[0] == ["ü", "2", None]
    assert isinstance(replies[1], redis.ResponseError)
    assert str(replies[1]) == str(expected[1])
    assert replies[2] == "text"
    assert replies[3] in ("PONG", True)
    assert round_trip(client, commands[:1], decode=False) == [["ü".encode(), b"2", None]]
    assert round_trip(client, []) == []
    assert client.get("s") == "text"  # the connection given back usable


def _replies(client: redis.Redis[Any], pk: str) -> list[Any]:
    commands = [
        ("HGETALL", EpisodeLog.redis_key(pk)),
        ("XRANGE", episode_events_key(pk), "-", "+"),
        ("XRANGE", episode_calls_key(pk), "-", "+"),
    ]
    return round_trip(client, commands, decode=False)


def test_the_export_line_reads_resp2_and_resp3_replies_alike(
    store: EpisodeStore, redis_url: str
) -> None:
    record = _records()[-1].model_copy(update={"episode_id": "one"})
    store.save_record(record)
    expected = store.load("one").to_json().encode()
    lines = []
    for protocol in (2, 3):
        # types-redis predates RESP3: no protocol argument.
        open_client: Any = redis.Redis.from_url
        with open_client(redis_url, protocol=protocol) as client:
            row, events, calls = _replies(client, "one")
            assert isinstance(row, dict) == (protocol == 3)  # RESP2: a flat list
            lines.append(export_line(row, events, calls, entry_names=("event", "call")))
    assert lines == [expected, expected]


def test_entries_with_their_mark_first_are_joined_and_other_fields_are_not(
    store: EpisodeStore,
) -> None:
    record = _records()[-1].model_copy(update={"episode_id": "one"})
    store.save_record(record)
    expected = store.load("one").to_json().encode()
    key = episode_events_key("one")
    entries = store.client.xrange(key)
    store.client.delete(key)
    for _, fields in entries:  # the same entries, the mark written before the payload
        store.client.xadd(key, {FORM_FIELD: fields[FORM_FIELD], "event": fields["event"]})
    row, events, calls = _replies(store.client, "one")
    assert export_line(row, events, calls, entry_names=("event", "call")) == expected
    # An entry with a field more, or the mark of another form: the full way (None).
    for extra in ({"other": "x"}, {FORM_FIELD: "older"}):
        changed: dict[Any, Any] = {**entries[0][1], **extra}
        store.client.xadd(key, changed)
        row, events, calls = _replies(store.client, "one")
        assert export_line(row, events, calls, entry_names=("event", "call")) is None
        store.client.xdel(key, store.client.xrevrange(key, count=1)[0][0])
    assert export_form() is not None
    assert b"".join(store.iter_export_lines(["one"])) == expected


def test_a_connection_the_server_dropped_is_made_anew(store: EpisodeStore, redis_url: str) -> None:
    client = store.client
    client.set("s", "before")
    assert round_trip(client, [("GET", "s")]) == ["before"]  # a pooled connection now open
    with redis.Redis.from_url(redis_url) as other:
        assert other.client_kill_filter(_type="normal", skipme=True) >= 1
        other.set("s", "after")
    assert round_trip(client, [("GET", "s"), ("PING",)])[0] == "after"
    assert client.get("s") == "after"  # and the pool still serves
