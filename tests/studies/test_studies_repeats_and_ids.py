"""Repeats that differ and replay alike, and ids that are fresh unless given: through the
library verbs, litellm's real HTTP path to the stand-in (``play_rule``, whose answers
vary with a request's seed) and a real embedded Redis."""

import pytest

import sotopia_are as sa
from sotopia_are.llm import Sampling, request_seed
from sotopia_are.record import EpisodeRecord
from sotopia_are.social import fresh_episode_id
from sotopia_are.storage import EpisodeExistsError, EpisodeStore, stable_episode_id
from sotopia_are.studies import benchmark, plan_batch
from sotopia_are.testing import LocalLLMServer, play_rule

MODEL = "openai/test-model"
NAMES = ["Mara Quinn", "Teo Alvarez"]
SEEDED = Sampling(temperature=0.7, seed=1)


def spec(**given: object) -> sa.EpisodeSpec:
    return sa.EpisodeSpec(
        scenario="Ten minutes before closing, a café owner asks about the unsold bread.",
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=4,
        **given,  # type: ignore[arg-type]
    )


def config(server: LocalLLMServer) -> sa.LLMConfig:
    return sa.LLMConfig(api_base=server.url)


def sent(record: EpisodeRecord) -> list[tuple[str, object]]:
    """What each agent call of ``record`` sent: its scope's agent and its seed, in order."""
    return [(call.scope.rsplit("/", 1)[-1], call.params.get("seed")) for call in record.calls]


# -- fresh ids unless asked ------------------------------------------------------------


def test_a_spec_without_an_id_runs_again_and_again_under_fresh_readable_ids(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = play_rule
    unnamed = spec()
    assert not unnamed.id_given
    first = sa.run(unnamed, models=MODEL, store=store, config=config(llm_server))
    second = sa.run(unnamed, models=MODEL, store=store, config=config(llm_server))
    assert first.episode_id != second.episode_id
    for record in (first, second):
        assert record.episode_id.startswith("ten-minutes-before-closing-")
        assert len(record.episode_id.rsplit("-", 1)[1]) == 6
        assert store.load(record.episode_id) == record
    assert sorted(store.episode_ids()) == sorted([first.episode_id, second.episode_id])
    assert not unnamed.replace(max_turns=2).id_given  # a copy stays unnamed


def test_a_spec_with_an_id_is_one_episode_a_second_run_is_a_clear_error(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = play_rule
    named = spec(episode_id="bakery-1")
    first = sa.run(named, models=MODEL, store=store, config=config(llm_server))
    asked = len(llm_server.requests)
    with pytest.raises(EpisodeExistsError) as refused:
        sa.run(named, models=MODEL, store=store, config=config(llm_server))
    message = str(refused.value)
    assert "episode bakery-1 is already stored, complete" in message
    for way_out in ("leave episode_id out", "replace=True", "--resume", "new tag"):
        assert way_out in message
    assert len(llm_server.requests) == asked  # refused before any model call
    assert store.load("bakery-1") == first  # and the stored one untouched

    again = sa.run(
        named, models=MODEL, store=store, config=config(llm_server), replace=True, tag="redo"
    )
    assert store.episode_ids() == ["bakery-1"]
    assert store.load("bakery-1") == again and again.tag == "redo"


def test_fresh_ids_are_safe_ids_whatever_the_name() -> None:
    assert fresh_episode_id("bakery-negotiation").startswith("bakery-negotiation-")
    odd = fresh_episode_id("Ünïcode / ../ scenario: name!")
    assert odd.startswith("unicode-scenario-name-")
    assert sa.EpisodeSpec.model_fields["episode_id"].default == "episode"
    assert spec(episode_id=odd).episode_id == odd  # a valid id


def test_a_batch_plans_the_same_ids_again_for_specs_with_and_without_ids() -> None:
    named, unnamed, other = spec(episode_id="bakery"), spec(), spec(seed=5)
    models = dict.fromkeys(NAMES, MODEL)
    planned = plan_batch([named, unnamed, other], models, tag="t", repeat=2)
    again = plan_batch([named, spec(), spec(seed=5)], models, tag="t", repeat=2)
    assert [p.spec.episode_id for p in planned] == [p.spec.episode_id for p in again]
    assert len({p.spec.episode_id for p in planned}) == 6
    # A named spec's ids are what they always were (a batch run before resumes).
    chosen = '{"Mara Quinn": "openai/test-model", "Teo Alvarez": "openai/test-model"}'
    assert planned[1].spec.episode_id == stable_episode_id("t", "bakery", chosen, "1")
    assert planned[2].scenario_id == unnamed.content_id() != other.content_id()
    with pytest.raises(ValueError, match="equal specs share one") as refused:
        plan_batch([unnamed, spec()], models, tag="t")
    assert repr(unnamed.content_id()) in str(refused.value)


# -- distinct, reproducible repeats ----------------------------------------------------


def test_the_repeats_of_a_seeded_batch_differ_and_the_batch_replays_to_the_same_requests(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = play_rule

    def played(tag: str) -> list[EpisodeRecord]:
        result = sa.batch(
            [spec(episode_id="bakery")], MODEL, tag=tag, store=store, repeat=4,
            agent_sampling=SEEDED, config=config(llm_server), workers=1,
        )  # fmt: skip
        assert not result.failed
        records = [store.load(p.spec.episode_id) for p in result.plan.planned]
        return sorted(records, key=lambda record: record.spec.seed)

    first = played("study")
    assert len({record.transcript() for record in first}) == 4  # four different episodes
    for repeat, record in enumerate(first):  # turn n is played by NAMES[n % 2]
        assert sorted(seed for _, seed in sent(record)) == sorted(  # type: ignore[type-var]
            request_seed(1, "agent", repeat, NAMES[turn % 2], turn) for turn in range(4)
        )
    again = played("study-again")  # the same batch under a fresh tag
    assert [sent(record) for record in again] == [sent(record) for record in first]
    assert [r.transcript() for r in again] == [r.transcript() for r in first]
    assert [[c.messages for c in r.calls] for r in again] == [
        [c.messages for c in r.calls] for r in first
    ]


def test_without_a_seed_no_request_carries_one(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = play_rule
    record = sa.run(spec(), models=MODEL, store=store, config=config(llm_server))
    assert record.calls and all("seed" not in call.params for call in record.calls)
    assert all("seed" not in request.body for request in llm_server.chat_requests)


def test_a_seeded_judge_draws_each_sample_and_episode_apart(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = play_rule
    judge = sa.LLMJudge(
        MODEL, sa.GOAL_ONLY, samples=2, config=config(llm_server),
        sampling=Sampling(temperature=0.0, seed=7),
    )  # fmt: skip
    record = sa.run(spec(seed=3), models=MODEL, judge=judge, store=store, config=config(llm_server))
    assert record.verdict is not None
    seeds = sorted(call.params["seed"] for call in record.verdict.evaluation.calls)
    assert seeds == sorted(request_seed(7, "judge", 3, n) for n in (1, 2))


def test_benchmark_seeds_give_distinct_episodes(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = play_rule
    result = benchmark(
        [spec(episode_id="bakery")], ["openai/model-a"], "openai/partner", tag="bench",
        judge_model="openai/judge", store=store, seeds=2, agent_sampling=SEEDED,
        config=config(llm_server), workers=1,
    )  # fmt: skip
    records = [store.load(p.spec.episode_id) for p in result.batch.plan.planned]
    assert len(records) == 4  # two roles, two seeds
    by_role: dict[str, set[str]] = {}
    for record in records:
        by_role.setdefault(record.scenario_id, set()).add(record.transcript())
    assert all(len(transcripts) == 2 for transcripts in by_role.values())
