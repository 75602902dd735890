"""The library verbs through litellm's real HTTP path and a real Redis: run plays, rates
and stores one episode; rate adds a verdict from the record, without playing again."""

from typing import Any

import pytest

import sotopia_are as sa
from sotopia_are.agents import ScriptedAgent
from sotopia_are.messages import AgentAction
from sotopia_are.social import AgentTurn
from sotopia_are.storage import EpisodeStore
from sotopia_are.testing import LocalLLMServer, schema_rule

MODEL = "openai/test-model"
NAMES = ["Mara Quinn", "Teo Alvarez"]
HELLO = AgentAction(action_type="speak", argument="Evening! Any bread left?")


def spec(episode_id: str = "bakery-1", turns: int = 4) -> sa.EpisodeSpec:
    return sa.EpisodeSpec(
        episode_id=episode_id,
        scenario="A bakery before closing.",
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=turns,
    )


def judge(server: LocalLLMServer, model: str = MODEL, **kwargs: Any) -> sa.LLMJudge:
    return sa.LLMJudge(model, config=sa.LLMConfig(api_base=server.url), **kwargs)


async def test_arun_plays_rates_and_stores_one_episode(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    config = sa.LLMConfig(api_base=llm_server.url)  # no key: a local server needs none
    record = await sa.arun(
        spec(), models=MODEL, judge=judge(llm_server), store=store, config=config
    )
    assert record.status is sa.EpisodeStatus.COMPLETE and record.turns_played == 4
    assert not record.failed_or_unrated and record.scores["Mara Quinn"]["goal"] == 5.0
    assert len(record.calls) == 4 and record.usage.calls == 5
    assert store.load(record.episode_id) == record


async def test_arate_adds_a_second_judge_without_playing_again(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    agents = [ScriptedAgent(name, [HELLO] * 2) for name in NAMES]
    record = await sa.arun(spec(), agents, judge=judge(llm_server), store=store)
    sent = len(llm_server.chat_requests)
    again = await sa.arate(record, judge(llm_server, rubric=sa.GOAL_ONLY), store=store)
    assert len(llm_server.chat_requests) == sent + 1  # one judge call, no agent played
    assert [v.rubric for v in again.verdicts] == ["sotopia_eval", "goal_only"]
    assert store.load(record.episode_id) == again
    # The same judge again is refused before any call is paid for.
    with pytest.raises(ValueError, match="already has a verdict"):
        await sa.arate(again, judge(llm_server), store=store)
    assert len(llm_server.chat_requests) == sent + 1


class Broken:
    name = NAMES[1]

    async def act(self, turn: AgentTurn) -> AgentAction:
        raise RuntimeError("the model went away")

    def call_records(self) -> list[Any]:
        return []


async def test_a_failed_episode_is_a_failed_record_never_none_scores(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    record = await sa.arun(
        spec(),
        [ScriptedAgent(NAMES[0], [HELLO] * 2), Broken()],
        judge=judge(llm_server),
        store=store,
    )
    assert record.status is sa.EpisodeStatus.FAILED and "the model went away" in record.reason
    assert record.failed_or_unrated and record.verdicts == () and record.scores == {}
    assert llm_server.chat_requests == []  # a failed episode is not rated
    assert store.load(record.episode_id) == record
    with pytest.raises(ValueError, match="failed, not complete"):
        await sa.arate(record, judge(llm_server))


async def test_a_judge_that_cannot_rate_leaves_an_unrated_verdict(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = lambda body: "I would rather not say."
    agents = [ScriptedAgent(name, [HELLO] * 2) for name in NAMES]
    record = await sa.arun(spec(), agents, judge=judge(llm_server), store=store)
    assert record.status is sa.EpisodeStatus.COMPLETE and record.failed_or_unrated
    [verdict] = record.verdicts
    assert not verdict.rated and verdict.evaluation.failures and record.scores == {}


async def test_a_stopped_run_leaves_its_episode_incomplete(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    class Interrupting:
        name = NAMES[1]

        async def act(self, turn: AgentTurn) -> AgentAction:
            raise KeyboardInterrupt

        def call_records(self) -> list[Any]:
            return []

    with pytest.raises(KeyboardInterrupt):
        await sa.arun(spec(), [ScriptedAgent(NAMES[0], [HELLO] * 2), Interrupting()], store=store)
    stored = store.load("bakery-1")
    assert stored.status is sa.EpisodeStatus.INCOMPLETE and "interrupted" in stored.reason


async def test_rate_script_plays_a_human_script_then_rates_it(
    llm_server: LocalLLMServer,
) -> None:
    llm_server.rule = schema_rule
    script = 'Turn #1\nMara Quinn said: "Evening!"\nTurn #2\nTeo Alvarez said: "Any bread?"'
    background = spec().background()
    record = await sa.arate_script(script, judge(llm_server), background)
    assert record.status is sa.EpisodeStatus.COMPLETE and record.turns_played == 2
    assert record.verdict is not None and record.verdict.rated
