"""The study workflow the command line calls as library functions: how models and judges
are chosen, which spec a run plays, a script replayed and stored, a panel rating a
script, the one-episode rating check and an ARE export checked by importing it back."""

import inspect
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sotopia_are as sa
from sotopia_are import studies
from sotopia_are.storage import EpisodeStore
from sotopia_are.studies import (
    SCRIPT_TERMINATION,
    STUDY_FLAGS,
    StudyInputError,
    check_to_rate,
    choose_agent_models,
    choose_judge,
    export_are_file,
    fresh_spec,
    judge_names,
    judge_sampling,
    make_judges,
    parse_sampling,
    replay_script,
)
from sotopia_are.testing import LocalLLMServer, schema_rule

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODEL = "openai/test-model"
NAMES = ["Mara Quinn", "Teo Alvarez"]
names = st.lists(st.text("abcxyz", min_size=1, max_size=4), min_size=1, max_size=5, unique=True)


def bakery() -> tuple[sa.EpisodeSpec, str]:
    spec = sa.EpisodeSpec.model_validate_json(
        (EXAMPLES / "scenarios" / "bakery_negotiation.json").read_text(encoding="utf-8")
    )
    return spec, (EXAMPLES / "scripts" / "bakery_negotiation.txt").read_text(encoding="utf-8")


@given(names, st.lists(st.sampled_from(range(5)), max_size=5))
def test_every_agent_gets_the_shared_model_unless_overridden(
    agents: list[str], overridden: list[int]
) -> None:
    overrides = {agents[i % len(agents)]: f"m{i}" for i in overridden}
    chosen = choose_agent_models(agents, "base", [f"{n}={m}" for n, m in overrides.items()])
    assert list(chosen) == agents
    assert chosen == {name: overrides.get(name, "base") for name in agents}


def test_a_bad_model_choice_says_what_to_pass() -> None:
    with pytest.raises(StudyInputError, match=r"no model for Teo Alvarez.*--model MODEL"):
        choose_agent_models(NAMES, None, ["Mara Quinn=m"])
    with pytest.raises(StudyInputError, match="expected NAME=MODEL"):
        choose_agent_models(NAMES, "m", ["Mara Quinn"])
    with pytest.raises(StudyInputError, match="unknown agent 'Zoe'"):
        choose_agent_models(NAMES, "m", ["Zoe=m"])


@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=6), st.none() | st.just("m"))
def test_judges_are_the_judge_models_in_order_else_the_agents_model(
    given_names: list[str], model: str | None
) -> None:
    if not given_names and model is None:
        with pytest.raises(StudyInputError, match="no model for the judge"):
            judge_names(given_names, model)
        return
    chosen = judge_names(given_names, model)
    assert chosen == (list(dict.fromkeys(given_names)) or [model])
    if len(chosen) > 1:
        with pytest.raises(StudyInputError, match="rates with one judge"):
            choose_judge(given_names, model)
    else:
        assert choose_judge(given_names, model) == chosen[0]


def test_sampling_is_parsed_and_the_judge_keeps_its_default_under_it() -> None:
    assert parse_sampling("temperature=0.5").temperature == 0.5
    assert judge_sampling("").temperature == 0.0
    assert judge_sampling("top_p=0.9").top_p == 0.9
    with pytest.raises(StudyInputError, match=r"--judge-sampling \(or \$"):
        judge_sampling("temperature=hot")


def test_a_run_plays_its_scenario_under_a_fresh_id(tmp_path: Path) -> None:
    spec, _ = bakery()
    first, scenario = fresh_spec(spec, source=tmp_path / "x.json", max_turns=3)
    second, again = fresh_spec(spec, source=tmp_path / "x.json")
    assert scenario == again == spec.stable_name()
    assert first.episode_id != second.episode_id and first.max_turns == 3
    unnamed = spec.model_copy(update={"name": None})
    assert fresh_spec(unnamed, scenario_id="env-1")[1] == "env-1"
    assert fresh_spec(unnamed, source=tmp_path / "My Scene.json")[1] == "my-scene"


def test_a_replayed_script_is_stored_and_exports_as_are_json(
    store: EpisodeStore, tmp_path: Path
) -> None:
    spec, script = bakery()
    record = replay_script(script, spec.replace(episode_id="demo-1"), store=store, tag="demo")
    assert record.status is sa.EpisodeStatus.COMPLETE and record.tag == "demo"
    assert store.load("demo-1") == record and record.verdict is None
    events = export_are_file(store, "demo-1", tmp_path / "demo.json")
    assert events == len(record.events) > 0


async def test_a_panel_rates_a_script_each_judge_once(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    spec, script = bakery()
    session = sa.LLMSession(sa.LLMConfig(api_base=llm_server.url))
    judges = make_judges([MODEL, "openai/other-model"], session)
    record = await sa.arate_script(script, judges, spec, episode_id="s-1", store=store)
    assert [v.judge_model for v in record.verdicts] == [MODEL, "openai/other-model"]
    assert store.load(record.episode_id) == record and record.tag == "script"
    one = await sa.arate_script(script, judges[0], spec, episode_id="s-2")
    again = await sa.arate(one, judges[1], termination=SCRIPT_TERMINATION)
    assert [v.scores for v in again.verdicts] == [v.scores for v in record.verdicts]


async def test_one_episode_asked_for_is_refused_when_rating_would_skip_it(
    llm_server: LocalLLMServer,
) -> None:
    llm_server.rule = schema_rule
    spec, script = bakery()
    session = sa.LLMSession(sa.LLMConfig(api_base=llm_server.url))
    first, second = make_judges([MODEL, "openai/other-model"], session)
    record = await sa.arate_script(script, first, spec, episode_id="s-3")
    check_to_rate(record, [second])
    check_to_rate(record, [first], replace=True)
    with pytest.raises(sa.VerdictExistsError):
        check_to_rate(record, [first])
    check_to_rate(record, [first, second])  # the panel has a judge still to rate
    both = await sa.arate(record, second, termination=SCRIPT_TERMINATION)
    with pytest.raises(StudyInputError, match="a verdict of each of the 2 judges"):
        check_to_rate(both, [first, second])
    stopped = record.model_copy(update={"status": sa.EpisodeStatus.INCOMPLETE})
    with pytest.raises(StudyInputError, match="is incomplete, not complete"):
        check_to_rate(stopped, [second])


def test_a_study_resolves_given_values_over_its_variables() -> None:
    env = {
        "SOTOPIA_ARE_MODEL": "env-model",
        "SOTOPIA_ARE_TIMEOUT": "12.5",
        "SOTOPIA_ARE_EVALUATOR_MODEL": "j1 j2",
        "SOTOPIA_ARE_SAMPLING": "temperature=0.5",
    }
    study = sa.StudyConfig.resolve(env=env, model="given", tag="pilot", timeout=None)
    assert study.model == "given" and study.timeout == 12.5 and study.tag == "pilot"
    assert study.judge_names() == ["j1", "j2"] and study.sampling.temperature == 0.5
    assert study.judge_sampling.temperature == 0.0  # the judge's default
    assert sa.StudyConfig.resolve(env={}) == sa.StudyConfig()
    with pytest.raises(ValueError, match="frozen"):
        study.model = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("SOTOPIA_ARE_TIMEOUT", "soon", r"--timeout \(or \$SOTOPIA_ARE_TIMEOUT\) 'soon': .*number"),
        ("SOTOPIA_ARE_TIMEOUT", "0", "greater than or equal to 0.1"),
        ("SOTOPIA_ARE_REQUEST_ATTEMPTS", "x", r"--request-attempts \(or \$"),
        ("SOTOPIA_ARE_TRANSPORT", "pigeon", r"--transport \(or \$SOTOPIA_ARE_TRANSPORT\)"),
        ("SOTOPIA_ARE_JUDGE_SAMPLING", "hot", r"--judge-sampling \(or \$"),
    ],
)
def test_a_variable_is_checked_as_its_flag_is(variable: str, value: str, said: str) -> None:
    with pytest.raises(StudyInputError, match=said):
        sa.StudyConfig.resolve(env={variable: value})


def test_a_study_names_its_fields_as_the_flags_do() -> None:
    assert set(sa.StudyConfig.model_fields) == set(STUDY_FLAGS)
    for name, (flag, _) in STUDY_FLAGS.items():
        assert flag == "--" + name.replace("_", "-")
    with pytest.raises(StudyInputError, match="no study setting colour"):
        sa.StudyConfig.resolve(env={}, colour="red")
    study = sa.StudyConfig(agent_model={"Mara Quinn": "a"}, judge_model="j", model="m")
    assert study.agent_models(NAMES) == {"Mara Quinn": "a", "Teo Alvarez": "m"}
    assert study.judge_name() == "j" and study.llm_config(4).max_concurrency == 4


def test_run_and_arun_share_one_declaration() -> None:
    assert inspect.signature(sa.run).parameters == inspect.signature(sa.arun).parameters
    assert "study" in inspect.signature(sa.run).parameters


async def test_a_run_takes_its_models_judge_and_tag_from_the_study(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    spec, _ = bakery()
    study = sa.StudyConfig(model=MODEL, api_base=llm_server.url, tag="pilot", samples=1)
    record = await sa.arun(spec.replace(max_turns=2), study=study, store=store)
    assert record.tag == "pilot" and set(record.models.values()) == {MODEL}
    assert record.verdict is not None and record.verdict.judge_model == MODEL
    unrated = study.model_copy(update={"evaluate": False})
    again = await sa.arun(spec.replace(max_turns=2), study=unrated, tag="other")
    assert again.verdict is None and again.tag == "other"
    with pytest.raises(StudyInputError, match="no model for"):
        await sa.arun(spec, study=sa.StudyConfig(), store=store)
    assert store.episode_ids(tag="pilot") == [record.episode_id]


def essence(record: sa.EpisodeRecord) -> tuple[object, ...]:
    """What a record says that the keywords or the study chose (not its ids or times)."""
    verdicts = [(v.judge_model, v.rubric, v.sampling) for v in record.verdicts]
    return (record.scenario_id, record.models, record.agent_sampling, record.status,
            record.turns_played, verdicts, record.scores)  # fmt: skip


@pytest.mark.parametrize(("verb", "twin"), [("rate", "arate"), ("rate_stored", "arate_stored")])
def test_each_sync_verb_shares_its_coroutines_declaration(verb: str, twin: str) -> None:
    declared = inspect.signature(getattr(studies, twin)).parameters
    assert inspect.signature(getattr(studies, verb)).parameters == declared
    assert "study" in declared


@pytest.mark.parametrize("verb", ["batch", "benchmark"])
def test_the_study_verbs_take_a_study(verb: str) -> None:
    assert "study" in inspect.signature(getattr(studies, verb)).parameters


async def test_a_rating_takes_its_judge_from_the_study_unless_given_one(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    spec, script = bakery()
    played = await studies.script_record(script, spec.replace(episode_id="r-1"))
    study = sa.StudyConfig(judge_model=MODEL, api_base=llm_server.url, rubric="goal_only")
    session = sa.LLMSession(sa.LLMConfig(api_base=llm_server.url))
    [judge] = make_judges([MODEL], session, rubric="goal_only")
    by_study = await sa.arate(played, study=study)
    assert essence(by_study) == essence(await sa.arate(played, judge))
    assert by_study.verdict is not None and by_study.verdict.judge_model == MODEL
    [other] = make_judges(["openai/other-model"], session)
    given = await sa.arate(played, other, study=study)
    assert [v.judge_model for v in given.verdicts] == ["openai/other-model"]
    with pytest.raises(StudyInputError, match="no judge given"):
        await sa.arate(played)
    with pytest.raises(StudyInputError, match="no model for the judge"):
        await sa.arate(played, study=sa.StudyConfig())


async def test_a_stored_rating_takes_its_judges_from_the_study_unless_given(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    spec, script = bakery()
    played = [await studies.script_record(script, spec.replace(episode_id=f"s-{n}"))
              for n in range(2)]  # fmt: skip
    ids = [store.save_record(record).episode_id for record in played]
    study = sa.StudyConfig(
        judge_model=[MODEL, "openai/other-model"], api_base=llm_server.url, concurrency=1
    )
    outcomes = await studies.arate_stored(store, ids[:1], study=study)
    session = sa.LLMSession(sa.LLMConfig(api_base=llm_server.url))
    judges = make_judges([MODEL, "openai/other-model"], session)
    same = await studies.arate_stored(store, ids[1:], judges, concurrency=1)
    assert [(o.judge, o.rated) for o in outcomes] == [(o.judge, o.rated) for o in same]
    assert [o.judge for o in outcomes] == [MODEL, "openai/other-model"]
    assert essence(store.load(ids[0])) == essence(store.load(ids[1]))
    [third] = make_judges(["openai/third-model"], session)
    given = await studies.arate_stored(store, ids[:1], third, study=study)
    assert [(o.judge, o.rated) for o in given] == [("openai/third-model", True)]
    with pytest.raises(StudyInputError, match="at least 1"):
        await studies.arate_stored(store, ids, third, concurrency=0, study=study)


def test_a_batch_with_a_study_plays_what_the_same_keywords_play(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    spec, _ = bakery()
    specs = [spec.replace(max_turns=2)]
    study = sa.StudyConfig(
        model=MODEL, api_base=llm_server.url, tag="by-study", rubric="goal_only",
        sampling="temperature=0.5", concurrency=1,
    )  # fmt: skip
    by_study = sa.batch(specs, store=store, workers=1, study=study)
    by_keywords = sa.batch(
        specs, MODEL, tag="by-keywords", store=store, workers=1, judge_model=MODEL,
        rubric="goal_only", agent_sampling=sa.Sampling(temperature=0.5),
        config=sa.LLMConfig(api_base=llm_server.url), concurrency=1,
    )  # fmt: skip
    [one], [two] = by_study.outcomes, by_keywords.outcomes
    assert essence(store.load(one.episode_id)) == essence(store.load(two.episode_id))
    assert store.load(one.episode_id).tag == "by-study" and not by_study.failed
    unrated = study.model_copy(update={"evaluate": False})
    given = sa.batch(specs, "openai/given", tag="given", store=store, workers=1, study=unrated)
    record = store.load(given.outcomes[0].episode_id)
    assert set(record.models.values()) == {"openai/given"} and record.verdict is None
    with pytest.raises(StudyInputError, match="needs a tag"):
        sa.batch(specs, MODEL, store=store, study=sa.StudyConfig(evaluate=False))


def test_a_benchmark_with_a_study_plays_what_the_same_keywords_play(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    spec, _ = bakery()
    study = sa.StudyConfig(
        judge_model=MODEL, api_base=llm_server.url, tag="bench-study", samples=1, concurrency=2
    )
    by_study = studies.benchmark([spec], [MODEL], "openai/partner", max_turns=2, store=store,
                                 workers=1, study=study)  # fmt: skip
    by_keywords = studies.benchmark(
        [spec], [MODEL], "openai/partner", max_turns=2, store=store, workers=1,
        tag="bench-keywords", judge_model=MODEL, config=sa.LLMConfig(api_base=llm_server.url),
        concurrency=2,
    )  # fmt: skip

    def played(result: studies.BenchmarkResult) -> list[tuple[object, ...]]:
        records = [store.load(o.episode_id) for o in result.batch.outcomes]
        return [essence(r) for r in sorted(records, key=lambda r: r.scenario_id)]

    assert played(by_study) == played(by_keywords) and len(played(by_study)) == 2
    assert set(store.episode_ids(tag="bench-study")) == {
        o.episode_id for o in by_study.batch.outcomes
    }
    given = studies.benchmark(
        [spec], [MODEL], "openai/partner", max_turns=2, store=store, workers=1, study=study,
        judge_model="openai/judge", tag="b3",
    )  # fmt: skip
    judged = {store.load(o.episode_id).verdicts[0].judge_model for o in given.batch.outcomes}
    assert judged == {"openai/judge"}
    with pytest.raises(StudyInputError, match="conversations needs a judge"):
        studies.benchmark([spec], [MODEL], "openai/partner", store=store, tag="x")
