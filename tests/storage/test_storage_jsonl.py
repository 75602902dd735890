"""JSONL: our profiles and episodes round trip; SOTOPIA's profile files import as they are."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sotopia_are.record import load_record
from sotopia_are.storage import (
    AgentProfile,
    EnvironmentProfile,
    EpisodeStatus,
    EpisodeStore,
    JsonlFormatError,
    RelationshipProfile,
    RelationshipType,
    export_episodes,
    export_records,
    import_episodes,
    import_records,
    read_records,
    write_records,
)

PROFILES = Path(__file__).parent.parent / "data" / "profiles"


def lines(name: str) -> list[str]:
    return (PROFILES / name).read_text(encoding="utf-8").splitlines()


def test_storage_sotopia_space_profiles_import() -> None:
    agents = read_records(AgentProfile, lines("sotopia-space_agent_profiles.head.jsonl"))
    assert agents[0].pk == "01H5TNE5PRCAF1CK5ERS5MVZ22"
    assert agents[0].name == "Amara Hartley" and agents[0].mbti == "INFJ"
    assert agents[0].moral_values == ["Care", "Fairness"]  # " Fairness" had a stray space
    envs = read_records(EnvironmentProfile, lines("sotopia-space_environment_profiles.head.jsonl"))
    assert envs[0].codename == "divide_things"
    assert envs[0].relationship is RelationshipType.friend  # was the string "3"
    assert envs[0].agent_constraint is None  # was "none"
    assert envs[0].age_constraint == "[(18, 70), (18, 70)]"  # kept as Sotopia wrote it
    assert len(envs[0].agent_goals) == 2
    pairs = read_records(
        RelationshipProfile, lines("sotopia-space_relationship_profiles.head.jsonl")
    )
    assert pairs[0].agent_1_id == "01H5TNE5PJTHMQ1Q3T398YN990"  # was agent1_id


def test_storage_sotopia_redis_dump_profiles_import() -> None:
    agents = read_records(AgentProfile, lines("sotopia-redis-dump_AgentProfile.jsonl"))
    assert agents[0].pk == "01H5TNE5PDV7WZ0C5KTGGXX1NR"
    assert agents[0].moral_values == ["Liberty"]  # was ["['Liberty']"]
    assert agents[0].schwartz_personal_values == ["Obedience"]
    envs = read_records(EnvironmentProfile, lines("sotopia-redis-dump_EnvironmentProfile.jsonl"))
    assert all(isinstance(e.relationship, RelationshipType) for e in envs)
    pairs = read_records(RelationshipProfile, lines("sotopia-redis-dump_RelationshipProfile.jsonl"))
    assert pairs[0].relationship is RelationshipType.acquaintance


def test_storage_profiles_round_trip_through_a_store(store: EpisodeStore) -> None:
    source = lines("sotopia-space_agent_profiles.head.jsonl")
    pks = import_records(store, AgentProfile, source, source="agents.jsonl")
    assert len(pks) == 3
    first = io.StringIO()
    assert export_records(store, AgentProfile, first) == 3
    again = read_records(AgentProfile, first.getvalue().splitlines())
    second = io.StringIO()
    write_records(again, second)
    assert second.getvalue() == first.getvalue()
    assert again == store.all(AgentProfile)


def test_storage_bad_line_names_source_and_line_and_writes_nothing(store: EpisodeStore) -> None:
    good = lines("sotopia-space_agent_profiles.head.jsonl")
    for bad, message in (
        ("{not json", "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"first_name": "A", "nickname": "x"}', "unknown field"),
        ('{"last_name": "no first name"}', "first_name"),
        ('{"first_name": "A", "moral_values": ["[unclosed"]}', "Python literal"),
    ):
        with pytest.raises(JsonlFormatError, match=rf"(?s)agents\.jsonl:3: .*{message}"):
            import_records(store, AgentProfile, [*good[:1], "", bad], source="agents.jsonl")
    assert store.client.dbsize() == 0


LEGACY = Path(__file__).parents[1] / "data" / "legacy" / "episodes-v0.jsonl"


def test_storage_episodes_round_trip_between_stores(store: EpisodeStore) -> None:
    legacy = LEGACY.read_text(encoding="utf-8").splitlines()
    assert import_episodes(store, legacy) == [load_record(line).episode_id for line in legacy]
    running = load_record(legacy[0]).model_copy(
        update={"episode_id": "left-running", "status": EpisodeStatus.RUNNING}
    )
    store.save_record(running)
    exported = io.StringIO()
    assert export_episodes(store, exported) == 4
    before = {pk: store.load(pk) for pk in store.episode_ids()}
    assert all(
        next(iter(json.loads(line))) == "version" for line in exported.getvalue().splitlines()
    )
    store.client.flushdb()
    assert sorted(import_episodes(store, exported.getvalue().splitlines())) == sorted(before)
    assert {pk: store.load(pk) for pk in before} == before
    assert store.episode_ids(status="running") == ["left-running"]
    again = io.StringIO()
    export_episodes(store, again)
    assert sorted(again.getvalue().splitlines()) == sorted(exported.getvalue().splitlines())


def test_storage_bad_episode_line_writes_nothing(store: EpisodeStore) -> None:
    good = LEGACY.read_text(encoding="utf-8").splitlines()[0]
    with pytest.raises(JsonlFormatError, match="eps:2: not a valid episode"):
        import_episodes(store, [good, '{"version": 1, "episode_id": "x"}'], source="eps")
    newer = json.dumps({**json.loads(load_record(good).to_json()), "version": 99})
    with pytest.raises(JsonlFormatError, match=r"eps:1: .*Upgrade sotopia_are"):
        import_episodes(store, [newer], source="eps")
    assert store.client.dbsize() == 0
