"""Task sets and samplers on real SOTOPIA profiles (a subset in tests/data/sotopia_subset):
SOTOPIA's combinations read as one task set and become specs; sampling from the stored
profiles is seeded, draws distinct tasks, and the related sampler pairs characters as
their scenario asks."""

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sotopia_are.storage import (
    AgentProfile,
    EnvironmentProfile,
    EpisodeStore,
    RecordNotFoundError,
    RelationshipProfile,
    RelationshipType,
    connect,
)
from sotopia_are.studies import (
    ImportKind,
    Task,
    TaskSet,
    import_file,
    read_task_set,
    sample_tasks,
    select_tasks,
)

SUBSET = Path(__file__).parents[1] / "data" / "sotopia_subset"
COMBOS = SUBSET / "env_agent_combos.jsonl"


def lines(name: str) -> list[dict[str, object]]:
    text = (SUBSET / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def store(storage_data_dir: str) -> Iterator[EpisodeStore]:
    """A store holding the subset's characters, scenarios and relationships."""
    with connect() as opened:
        for name, kind in [
            ("agent_profiles.jsonl", ImportKind.agents),
            ("environment_profiles.jsonl", ImportKind.environments),
            ("relationship_profiles.jsonl", ImportKind.relationships),
        ]:
            import_file(opened, SUBSET / name, kind=kind)
        yield opened


def test_sotopia_combinations_read_as_one_task_set_of_specs(store: EpisodeStore) -> None:
    tasks = read_task_set(COMBOS)
    combos = lines("env_agent_combos.jsonl")
    assert tasks.name == "env_agent_combos" and len(tasks) == len(combos) == 12
    assert [t.task_id for t in tasks.tasks] == [c["combo_id"] for c in combos]
    specs = tasks.specs(store, max_turns=6)
    environments = {e["env_id"]: e for e in lines("environment_profiles.jsonl")}
    agents = {a["agent_id"]: a for a in lines("agent_profiles.jsonl")}
    for combo, spec in zip(combos, specs, strict=True):
        environment = environments[str(combo["env_id"])]
        assert spec.name == combo["combo_id"] and not spec.id_given and spec.max_turns == 6
        assert spec.scenario == environment["scenario"]
        assert spec.agent_goals == environment["agent_goals"]
        ids = combo["agent_ids"]
        assert isinstance(ids, list)
        assert spec.agent_names == [
            f"{agents[i]['first_name']} {agents[i]['last_name']}" for i in ids
        ]


def test_a_task_set_file_round_trips_and_bad_lines_are_named(tmp_path: Path) -> None:
    tasks = read_task_set(COMBOS)
    ours = tmp_path / "mine.jsonl"
    ours.write_text(tasks.to_jsonl(), encoding="utf-8")
    assert read_task_set(ours, name="env_agent_combos") == tasks
    bad = tmp_path / "bad.jsonl"
    bad.write_text(ours.read_text().splitlines()[0] + '\n{"env_id": "e"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not a task: no 'agent_ids'"):
        read_task_set(bad)


def test_a_task_whose_profile_is_missing_says_which(store: EpisodeStore) -> None:
    missing = TaskSet("t", (Task("t1", "no-such-env", ("a", "b")),))
    with pytest.raises(RecordNotFoundError, match=r"task t1: .*no-such-env.* import its profiles"):
        missing.specs(store)


def test_a_sample_of_a_task_set_is_seeded_and_keeps_its_order() -> None:
    tasks = read_task_set(COMBOS)
    first = tasks.sample(5, seed=7)
    assert first == tasks.sample(5, seed=7) and len(first) == 5
    order = [t.task_id for t in tasks.tasks]
    assert [order.index(t.task_id) for t in first.tasks] == sorted(
        order.index(t.task_id) for t in first.tasks
    )
    assert {tasks.sample(5, seed=s).tasks for s in range(6)} != {first.tasks}
    with pytest.raises(ValueError, match="cannot draw 13 tasks from the 12"):
        tasks.sample(13)


def test_uniform_sampling_is_seeded_and_draws_distinct_playable_tasks(
    store: EpisodeStore,
) -> None:
    drawn = sample_tasks(store, 30, seed=3)
    assert drawn == sample_tasks(store, 30, seed=3)
    assert drawn != sample_tasks(store, 30, seed=4)
    pairs = {(t.env_id, t.agent_ids) for t in drawn.tasks}
    assert len(pairs) == 30 and all(len(set(t.agent_ids)) == 2 for t in drawn.tasks)
    specs = drawn.specs(store)
    assert len({s.name for s in specs}) == 30
    # 6 scenarios x 20 characters x 19 partners
    with pytest.raises(ValueError, match="allow 2280 distinct tasks, not 2281"):
        sample_tasks(store, 2281)


def expected_related() -> set[tuple[str, tuple[str, ...]]]:
    """Every (scenario, ordered character pair) of the subset whose pair has a
    relationship profile of the scenario's kind, worked out from the files."""
    kinds: dict[frozenset[object], set[int]] = {}
    for r in lines("relationship_profiles.jsonl"):
        kinds.setdefault(frozenset((r["agent1_id"], r["agent2_id"])), set()).add(
            int(str(r["relationship"]))
        )
    characters = [str(a["agent_id"]) for a in lines("agent_profiles.jsonl")]
    return {
        (str(e["env_id"]), (a, b))
        for e in lines("environment_profiles.jsonl")
        for a, b in itertools.permutations(characters, 2)
        if int(str(e["relationship"])) in kinds.get(frozenset((a, b)), set())
    }


def test_related_sampling_pairs_characters_as_the_scenario_asks(store: EpisodeStore) -> None:
    possible = expected_related()
    drawn = sample_tasks(store, len(possible), seed=1, related=True)
    assert {(t.env_id, t.agent_ids) for t in drawn.tasks} == possible
    # SOTOPIA drew its own combinations the same way.
    combos = {(c["env_id"], tuple(c["agent_ids"])) for c in lines("env_agent_combos.jsonl")}  # type: ignore[arg-type]
    assert combos <= possible
    few = sample_tasks(store, 5, seed=9, related=True)
    assert few == sample_tasks(store, 5, seed=9, related=True)
    assert {(t.env_id, t.agent_ids) for t in few.tasks} <= possible
    with pytest.raises(ValueError, match=f"allow {len(possible)} tasks with characters related"):
        sample_tasks(store, len(possible) + 1, related=True)


# The store is only read: one per test function is enough.
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32), count=st.integers(1, 76), related=st.booleans())
def test_any_seed_draws_distinct_tasks_and_the_same_ones_again(
    store: EpisodeStore, seed: int, count: int, related: bool
) -> None:
    drawn = sample_tasks(store, count, seed=seed, related=related)
    assert drawn == sample_tasks(store, count, seed=seed, related=related)
    pairs = {(t.env_id, t.agent_ids) for t in drawn.tasks}
    assert len(pairs) == len({t.task_id for t in drawn.tasks}) == count
    if related:
        assert pairs <= expected_related()


def test_three_agent_tasks_need_every_two_characters_related(store: EpisodeStore) -> None:
    a, b, c, d = sorted(p.pk for p in store.all(AgentProfile))[:4]
    store.save(
        EnvironmentProfile(
            pk="three-friends",
            codename="three friends plan a trip",
            scenario="Three friends plan a weekend trip.",
            agent_goals=["go to the sea", "go hiking", "stay in town"],
            relationship=RelationshipType.family_member,
        )
    )
    family = RelationshipType.family_member
    for x, y in [(a, b), (b, c), (a, c), (c, d)]:  # d is family to c only
        store.save(RelationshipProfile(agent_1_id=x, agent_2_id=y, relationship=family))
    drawn = sample_tasks(store, 6, agents=3, related=True, seed=0)
    assert {t.agent_ids for t in drawn.tasks} == set(itertools.permutations((a, b, c)))
    assert all(t.task_id.startswith("three_friends_plan_a_trip-") for t in drawn.tasks)
    (spec,) = TaskSet("one", drawn.tasks[:1]).specs(store)
    assert len(spec.agent_names) == 3
    uniform = sample_tasks(store, 4, agents=3, seed=2)
    assert all(t.env_id == "three-friends" for t in uniform.tasks)


def test_select_tasks_takes_a_file_or_a_sample(store: EpisodeStore) -> None:
    assert select_tasks(store, path=COMBOS) == read_task_set(COMBOS)
    assert select_tasks(store, path=COMBOS, count=3, seed=2) == read_task_set(COMBOS).sample(
        3, seed=2
    )
    assert select_tasks(store, count=3, seed=2, related=True) == sample_tasks(
        store, 3, seed=2, related=True
    )
    with pytest.raises(ValueError, match="--tasks FILE"):
        select_tasks(store)
