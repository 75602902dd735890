"""`batch` keeps each episode's failure in that episode: a judge answering one episode
with no choices, another with a 400, leaves those two unrated (their failures recorded)
and the batch goes on; a rejected key, which would fail every episode, stops it."""

import json
from collections.abc import Mapping
from typing import Any

import pytest

import sotopia_are as sa
from sotopia_are.llm import RetryPolicy
from sotopia_are.storage import EpisodeStore
from sotopia_are.studies import BatchError
from sotopia_are.testing import LocalLLMServer, Reply, ReplyLike

MODEL = "openai/test-model"
NAMES = ["Mara Quinn", "Teo Alvarez"]
LEAVE = json.dumps({"action_type": "leave", "argument": ""})
NO_CHOICES = Reply(
    body=json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode()
)
TOO_LONG = Reply.error(400, "maximum context length is 8192 tokens (context_length_exceeded)")


def spec(name: str) -> sa.EpisodeSpec:
    return sa.EpisodeSpec(
        episode_id=name,
        scenario=f"A bakery before closing [{name}].",
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=2,
    )


def rating() -> str:
    return json.dumps(
        {n: {d.name: {"reasoning": "ok", "score": d.low} for d in sa.SOTOPIA_EVAL.dimensions}
         for n in NAMES}
    )  # fmt: skip


def judging(faults: Mapping[str, ReplyLike]) -> Any:
    def rule(body: Mapping[str, Any]) -> ReplyLike:
        if "impartial expert judge" not in body["messages"][0]["content"]:
            return LEAVE
        text = json.dumps(body["messages"])
        return next((r for name, r in faults.items() if f"[{name}]" in text), rating())

    return rule


def config(server: LocalLLMServer) -> sa.LLMConfig:
    fast = RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.02)
    return sa.LLMConfig(api_base=server.url, timeout_s=5.0, retry=fast)


def test_a_judge_failure_of_one_episode_stays_in_that_episode(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = judging({"e1": NO_CHOICES, "e2": TOO_LONG})
    result = sa.batch(
        [spec(f"e{n}") for n in range(3)], MODEL, tag="t", store=store, judge_model=MODEL,
        config=config(llm_server), workers=1, concurrency=1,
    )  # fmt: skip
    assert len(result.outcomes) == 3 and result.failed and result.unfinished == 2
    by_scenario = {store.get_episode(o.episode_id).scenario_id: o for o in result.outcomes}
    assert [name for name, o in sorted(by_scenario.items()) if o.unrated] == ["e1", "e2"]
    assert all(o.status is sa.EpisodeStatus.COMPLETE for o in result.outcomes)
    failures = {
        name: store.load(o.episode_id).verdicts[0].evaluation.failures[0]
        for name, o in by_scenario.items()
        if o.unrated
    }
    assert failures["e1"].error_type == "MalformedReplyError"
    assert "with a reply with no choices" in failures["e1"].error
    assert llm_server.url in failures["e1"].error
    assert failures["e2"].error_type == "RequestRejectedError"


def test_a_rejected_key_stops_the_batch_and_leaves_nothing_running(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = judging({"e0": Reply.error(401, "invalid api key")})
    with pytest.raises(BatchError, match="a worker stopped: PermanentLLMError"):
        sa.batch(
            [spec("e0")], MODEL, tag="k", store=store, judge_model=MODEL,
            config=config(llm_server), workers=1,
        )  # fmt: skip
    assert not store.list_episodes(tag="k", status=sa.EpisodeStatus.RUNNING)
