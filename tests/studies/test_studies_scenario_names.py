"""A spec's ``name`` names its scenario, apart from any episode id: the example files carry
one, so loading one and running it twice on one store gives two episodes of that scenario;
a file with an explicit ``episode_id`` is still that one episode. Through the library
verbs, litellm's real HTTP path to the stand-in and a real embedded Redis."""

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sotopia_are as sa
from sotopia_are.social import script_spec
from sotopia_are.social.spec import SAFE_ID_CHARACTERS, slug
from sotopia_are.storage import EpisodeExistsError, EpisodeStore
from sotopia_are.studies import benchmark_specs, plan_batch, script_record
from sotopia_are.testing import LocalLLMServer, play_rule

EXAMPLES = Path(__file__).parents[2] / "examples"
BAKERY_FILE = EXAMPLES / "scenarios" / "bakery_negotiation.json"
MODEL = "openai/test-model"
NAMES = ["Mara Quinn", "Teo Alvarez"]
SAFE_NAMES = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", fullmatch=True)


def spec(**given_fields: object) -> sa.EpisodeSpec:
    return sa.EpisodeSpec(
        scenario="Ten minutes before closing, a café owner asks about the unsold bread.",
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=2,
        **given_fields,  # type: ignore[arg-type]
    )


def test_an_example_file_runs_twice_on_one_store_as_two_episodes_of_its_scenario(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = play_rule
    example = sa.EpisodeSpec.model_validate_json(BAKERY_FILE.read_text(encoding="utf-8"))
    assert example.name == "bakery-negotiation" and not example.id_given
    config = sa.LLMConfig(api_base=llm_server.url)
    first = sa.run(example, models=MODEL, store=store, config=config)
    second = sa.run(example, models=MODEL, store=store, config=config)
    assert first.episode_id != second.episode_id
    for record in (first, second):
        assert record.episode_id.startswith("bakery-negotiation-")
        assert record.scenario_id == "bakery-negotiation"
        assert store.load(record.episode_id) == record
    assert sorted(store.episode_ids()) == sorted([first.episode_id, second.episode_id])
    listed = store.list_episodes(scenario="bakery-negotiation")
    assert sorted(log.pk for log in listed) == sorted([first.episode_id, second.episode_id])
    # An explicit scenario id still wins over the name.
    third = sa.run(example, models=MODEL, store=store, config=config, scenario_id="other")
    assert store.load(third.episode_id).scenario_id == "other"


def test_a_spec_file_with_an_explicit_episode_id_is_still_one_episode(
    llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path
) -> None:
    llm_server.rule = play_rule
    data = json.loads(BAKERY_FILE.read_text(encoding="utf-8"))
    old_style = {"episode_id": data.pop("name"), **data}  # as the files were written before
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old_style), encoding="utf-8")
    spec_of_file = sa.EpisodeSpec.model_validate_json(path.read_text(encoding="utf-8"))
    assert spec_of_file.id_given and spec_of_file.name is None
    config = sa.LLMConfig(api_base=llm_server.url)
    first = sa.run(spec_of_file, models=MODEL, store=store, config=config)
    assert first.episode_id == first.scenario_id == "bakery-negotiation"
    with pytest.raises(EpisodeExistsError, match="episode bakery-negotiation is already stored"):
        sa.run(spec_of_file, models=MODEL, store=store, config=config)
    assert store.episode_ids() == ["bakery-negotiation"]


@given(name=SAFE_NAMES)
def test_each_run_of_a_named_spec_is_a_fresh_safe_id_from_its_name(name: str) -> None:
    named = spec(name=name)
    first, second = named.for_run(), named.for_run()
    assert first.episode_id != second.episode_id
    base = name if len(name) <= 64 else slug(name)
    for played in (first, second):
        assert played.id_given and played.name == name
        assert played.episode_id.startswith(f"{base}-")
        assert len(played.episode_id.rsplit("-", 1)[1]) == 6
        assert sa.EpisodeSpec(**{**played.model_dump(), "episode_id": played.episode_id})
    assert not named.replace(max_turns=3).id_given  # a copy stays a scenario
    assert named.stable_name() == name
    assert named.content_id() == spec().content_id()  # the name is not what is played


@pytest.mark.parametrize("name", ["", "-x", ".hidden", "a b", "../up", "a:b", "x" * 129])
def test_an_unsafe_name_is_refused_naming_what_is_allowed(name: str) -> None:
    with pytest.raises(ValueError, match="scenario name") as refused:
        spec(name=name)
    assert SAFE_ID_CHARACTERS in str(refused.value)


def test_a_batch_plans_a_named_spec_by_its_name_as_it_planned_the_same_id() -> None:
    models = dict.fromkeys(NAMES, MODEL)
    by_name = plan_batch([spec(name="bakery")], models, tag="t", repeat=2)
    by_id = plan_batch([spec(episode_id="bakery")], models, tag="t", repeat=2)
    # A file that traded its episode_id for a name resumes the batch it started.
    assert [p.spec.episode_id for p in by_name] == [p.spec.episode_id for p in by_id]
    assert {p.scenario_id for p in by_name} == {"bakery"}
    both = plan_batch([spec(episode_id="b0", name="bakery")], models, tag="t")
    assert both[0].scenario_id == "bakery"  # the episodes' scenario is the name
    assert (
        both[0].spec.episode_id
        == plan_batch([spec(episode_id="b0")], models, tag="t")[0].spec.episode_id
    )


def test_two_specs_of_a_batch_under_one_name_are_refused_naming_it() -> None:
    models = dict.fromkeys(NAMES, MODEL)
    with pytest.raises(ValueError, match="more than one spec of the batch is named 'bakery'"):
        plan_batch([spec(name="bakery"), spec(name="bakery", seed=5)], models, tag="t")
    with pytest.raises(ValueError, match="'b0'"):
        plan_batch(
            [spec(episode_id="b0", name="x"), spec(episode_id="b0", name="y")], models, tag="t"
        )
    # The same name under other models is another episode (a benchmark's roles).
    other = dict.fromkeys(NAMES, "openai/other")
    planned = plan_batch([spec(name="bakery"), spec(name="bakery")], [models, other], tag="t")
    assert len({p.spec.episode_id for p in planned}) == 2


def test_a_benchmark_names_each_role_after_the_spec() -> None:
    for task, stable in ((spec(name="bakery"), "bakery"), (spec(episode_id="b0", name="x"), "b0")):
        planned = benchmark_specs([task], ["openai/a"], ["openai/p"])
        played = [played for played, _ in planned]
        assert [p.name for p in played] == [f"{stable}.tested0", f"{stable}.tested1"]
        assert not any(p.id_given for p in played)
        models = [chosen for _, chosen in planned]
        batch = plan_batch(played, models, tag="bench")
        assert [p.scenario_id for p in batch] == [f"{stable}.tested0", f"{stable}.tested1"]


async def test_a_script_rated_against_a_named_spec_is_the_scripts_episode() -> None:
    named = sa.EpisodeSpec.model_validate_json(BAKERY_FILE.read_text(encoding="utf-8"))
    script = (EXAMPLES / "scripts" / "bakery_negotiation.txt").read_text(encoding="utf-8")
    assert not script_spec(named, script).id_given  # replaying keeps it a scenario
    record = await script_record(script, named, episode_id="take-1")
    assert (record.episode_id, record.scenario_id) == ("take-1", "bakery-negotiation")
    explicit = await script_record(script, named.replace(episode_id="mine"), episode_id="take-1")
    assert explicit.episode_id == "mine"
