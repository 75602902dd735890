"""Sampling settings through the library verbs, litellm's real HTTP path and a real Redis:
what each request carried (as the stand-in server received it), and what the stored
record says was used — the judge at temperature 0 unless told otherwise."""

from typing import Any

import pytest

import sotopia_are as sa
from sotopia_are.agents import ScriptedAgent
from sotopia_are.llm import DEFAULT_JUDGE_SAMPLING, Sampling, request_seed
from sotopia_are.messages import AgentAction
from sotopia_are.storage import EpisodeStore
from sotopia_are.testing import LocalLLMServer, ReceivedRequest, schema_rule

MODEL = "openai/test-model"
NAMES = ["Mara Quinn", "Teo Alvarez"]
AGENTS = Sampling(temperature=0.7, seed=3, max_tokens=77, presence_penalty=0.1)
JUDGE = Sampling(temperature=0.0, seed=11)
HELLO = AgentAction(action_type="speak", argument="Evening! Any bread left?")


def spec(episode_id: str = "bakery-1") -> sa.EpisodeSpec:
    return sa.EpisodeSpec(
        episode_id=episode_id,
        scenario=f"A bakery before closing [{episode_id}].",
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=2,
    )


def unseeded(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` but their seed (each request sends its own, drawn from the study's)."""
    return {key: value for key, value in params.items() if key != "seed"}


def judge(server: LocalLLMServer, **kwargs: Any) -> sa.LLMJudge:
    return sa.LLMJudge(MODEL, sa.GOAL_ONLY, config=sa.LLMConfig(api_base=server.url), **kwargs)


def split(server: LocalLLMServer) -> tuple[list[ReceivedRequest], list[ReceivedRequest]]:
    """The agents' and the judge's requests the server received."""
    requests = server.chat_requests
    judged = [r for r in requests if "impartial expert judge" in r.messages[0]["content"]]
    return [r for r in requests if r not in judged], judged


async def test_by_default_the_judge_sends_temperature_0_and_agents_leave_it_to_the_provider(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    config = sa.LLMConfig(api_base=llm_server.url)
    record = await sa.arun(
        spec(), models=MODEL, judge=judge(llm_server), store=store, config=config
    )

    agents, [judged] = split(llm_server)
    assert judged.body["temperature"] == 0.0
    assert agents and not any({"temperature", "top_p", "seed"} & r.body.keys() for r in agents)
    assert record.agent_sampling == dict.fromkeys(NAMES, Sampling())
    assert record.verdicts[0].sampling == DEFAULT_JUDGE_SAMPLING
    assert store.load(record.episode_id) == record


async def test_an_explicit_empty_sampling_leaves_the_judge_to_the_provider(
    llm_server: LocalLLMServer,
) -> None:
    llm_server.rule = schema_rule
    agents = [ScriptedAgent(name, [HELLO]) for name in NAMES]
    record = await sa.arun(spec(), agents, judge=judge(llm_server, sampling=Sampling()))

    [judged] = llm_server.chat_requests
    assert "temperature" not in judged.body
    assert record.agent_sampling == {}  # scripted agents sample nothing
    assert record.verdicts[0].sampling == Sampling()


async def test_settings_given_go_with_every_request_and_stay_in_the_stored_record(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    config = sa.LLMConfig(api_base=llm_server.url)
    record = await sa.arun(
        spec(), models=MODEL, sampling=AGENTS, judge=judge(llm_server, sampling=JUDGE),
        store=store, config=config,
    )  # fmt: skip

    agents, [judged] = split(llm_server)
    assert len(agents) == 2
    for turn, request in enumerate(agents):
        # max_tokens replaces the agent's own answer budget.
        assert {k: request.body.get(k) for k in AGENTS.params()} == {
            **AGENTS.params(),
            "seed": request_seed(3, "agent", 0, NAMES[turn % 2], turn),
        }
    assert judged.body["temperature"] == 0.0
    assert judged.body["seed"] == request_seed(11, "judge", 0, 1)
    assert judged.body["max_tokens"] == judge(llm_server).max_tokens(2)  # its own budget

    loaded = store.load(record.episode_id)
    assert loaded == record
    assert loaded.agent_sampling == dict.fromkeys(NAMES, AGENTS)
    [verdict] = loaded.verdicts
    assert verdict.sampling == JUDGE
    assert len(loaded.calls) == 2 and verdict.evaluation.calls
    # Each call's record keeps the seed its request sent.
    assert [call.params["seed"] for call in loaded.calls] == [r.body["seed"] for r in agents]
    for call in loaded.calls:
        assert unseeded(AGENTS.params()).items() <= call.params.items()
    for call in verdict.evaluation.calls:
        assert {**JUDGE.params(), "seed": judged.body["seed"]}.items() <= call.params.items()


async def test_a_second_rating_keeps_its_judges_sampling(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    agents = [ScriptedAgent(name, [HELLO]) for name in NAMES]
    record = await sa.arun(spec(), agents, store=store)
    hotter = Sampling(temperature=1.0, top_p=0.5)
    rated = await sa.arate(record, judge(llm_server, sampling=hotter), store=store)

    [judged] = llm_server.chat_requests
    assert (judged.body["temperature"], judged.body["top_p"]) == (1.0, 0.5)
    assert (
        store.load(record.episode_id).verdicts[0].sampling == hotter == rated.verdicts[0].sampling
    )


def test_sampling_is_for_agents_built_from_models_not_ones_given() -> None:
    agents = [ScriptedAgent(name, []) for name in NAMES]
    with pytest.raises(ValueError, match="sampling is for the LLM agents built from models"):
        sa.run(spec(), agents, sampling=AGENTS)


def test_a_batch_sends_and_keeps_both_settings_in_every_worker(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    result = sa.batch(
        [spec("e1"), spec("e2")], MODEL, tag="sampled", store=store, judge_model=MODEL,
        rubric="goal_only", agent_sampling=AGENTS, judge_sampling=JUDGE,
        config=sa.LLMConfig(api_base=llm_server.url), workers=2,
    )  # fmt: skip

    assert result.workers == 2 and not result.failed
    agents, judged = split(llm_server)
    assert len(agents) == 4 and len(judged) == 2
    assert all(r.body["presence_penalty"] == 0.1 for r in agents)
    assert all(r.body["temperature"] == 0.0 for r in judged)
    # The two episodes of one spec seed share the study's draws; every request of an
    # episode has its own.
    assert len({r.body["seed"] for r in agents}) == 2
    assert {r.body["seed"] for r in judged} == {request_seed(11, "judge", 0, 1)}
    for outcome in result.outcomes:
        record = store.load(outcome.episode_id)
        assert record.agent_sampling == dict.fromkeys(NAMES, AGENTS)
        assert record.verdicts[0].sampling == JUDGE
