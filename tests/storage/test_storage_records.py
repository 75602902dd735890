"""Records on plain Redis (no modules): profiles, JSON fields, redis-om compatibility."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from sotopia_are.storage import (
    AgentProfile,
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStore,
    RecordNotFoundError,
    RelationshipProfile,
    RelationshipType,
)


def test_storage_server_has_no_modules(store: EpisodeStore) -> None:
    # What the storage must work on: Redis without RedisJSON or RediSearch.
    assert store.client.execute_command("MODULE", "LIST") == []


def test_storage_profiles_save_get_all_delete(store: EpisodeStore) -> None:
    ann = AgentProfile(first_name="Ann", last_name="Ode", age=41, moral_values=["Care", "Fairness"])
    bo = AgentProfile(first_name="Bo", pk="bo")
    store.save_all([ann, bo])
    assert store.get(AgentProfile, ann.pk) == ann
    assert store.get(AgentProfile, ann.pk).moral_values == ["Care", "Fairness"]
    assert [p.pk for p in store.all(AgentProfile)] == sorted([ann.pk, "bo"])
    assert store.exists(AgentProfile, "bo")
    assert store.delete(AgentProfile, "bo") is True
    assert store.delete(AgentProfile, "bo") is False
    with pytest.raises(RecordNotFoundError, match="no agent profile 'bo'"):
        store.get(AgentProfile, "bo")
    with pytest.raises(KeyError):  # RecordNotFoundError is a KeyError too
        store.get(AgentProfile, "bo")


def test_storage_environment_profile_fields_round_trip(store: EpisodeStore) -> None:
    env = EnvironmentProfile(
        codename="plot_auction",
        scenario="Neighbours bid for the last garden plot.",
        agent_goals=["Get the plot (<extra_info>You have 40 euros</extra_info>)", "Keep the peace"],
        relationship=RelationshipType.acquaintance,
        agent_constraint=[["a"], ["b", "c"]],
        tags=["negotiation", "ünïcode"],
    )
    store.save(env)
    back = store.get(EnvironmentProfile, env.pk)
    assert back == env
    assert back.relationship is RelationshipType.acquaintance
    assert back.age_constraint is None
    relationship = RelationshipProfile(agent_1_id="a", agent_2_id="b", relationship=3)
    store.save(relationship)
    assert store.get(RelationshipProfile, relationship.pk).relationship is RelationshipType.friend


def test_storage_hash_layout_is_flat_json_text(store: EpisodeStore) -> None:
    env = EnvironmentProfile(pk="e", agent_goals=["b", "a"], tags=[])
    store.save(env)
    raw = store.client.hgetall("sotopia_are:EnvironmentProfile:e")
    assert raw["agent_goals"] == '["b","a"]'
    assert raw["relationship"] == "0"
    assert "age_constraint" not in raw  # None fields are left out, as redis-om does


@pytest.fixture
def bound_models(store: EpisodeStore) -> Iterator[None]:
    """redis-om's classes bound to the test server, as ``Meta.database`` does for users."""
    models = (AgentProfile, EpisodeLog)
    saved = [model._meta.database for model in models]
    for model in models:
        model._meta.database = store.client
    yield
    for model, database in zip(models, saved, strict=True):
        model._meta.database = database


@pytest.mark.usefixtures("bound_models")
def test_storage_records_are_interchangeable_with_redis_om(store: EpisodeStore) -> None:
    written_by_store = store.save(AgentProfile(first_name="Ann", moral_values=["Care"]))
    assert AgentProfile.get(written_by_store.pk) == written_by_store
    written_by_redis_om = AgentProfile(first_name="Bo", schwartz_personal_values=["Power"])
    written_by_redis_om.save()
    assert store.get(AgentProfile, written_by_redis_om.pk) == written_by_redis_om
    episode = store.start_episode(EpisodeLog(pk="e1", agents=["A", "B"], scores={}))
    assert EpisodeLog.get("e1") == episode


def test_storage_documents_are_plain_json(store: EpisodeStore) -> None:
    profile = AgentProfile(first_name="Ann", moral_values=["Care"])
    document = profile.to_document()
    assert document["moral_values"] == ["Care"]
    assert AgentProfile.from_document(document) == profile
    with pytest.raises(ValueError, match="unknown field"):
        AgentProfile.from_document({**document, "nickname": "A"})


def test_storage_connection_errors_name_the_location(store: EpisodeStore) -> None:
    assert "***" not in store.location
    assert isinstance(store.client, redis.Redis)
