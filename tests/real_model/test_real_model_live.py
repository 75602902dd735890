"""Against a live real model, opt-in: set ``SOTOPIA_ARE_TEST_MODEL`` (e.g. ``openai/qwen15``)
and, for an OpenAI-compatible server, ``SOTOPIA_ARE_TEST_API_BASE``
(e.g. ``http://127.0.0.1:8089/v1``). Never part of default CI: without them it is skipped
with the reason. The README says how to serve a small model on a CPU for it.
"""

import os

import pytest

import sotopia_are as sa
from sotopia_are.agents import llm_agents_for
from sotopia_are.evaluation import LLMJudge
from sotopia_are.llm import LLMConfig, LLMSession
from sotopia_are.social import EpisodeSpec

MODEL = os.environ.get("SOTOPIA_ARE_TEST_MODEL")
API_BASE = os.environ.get("SOTOPIA_ARE_TEST_API_BASE")

pytestmark = pytest.mark.skipif(
    not MODEL,
    reason="no real model: set SOTOPIA_ARE_TEST_MODEL (and SOTOPIA_ARE_TEST_API_BASE for a "
    "local OpenAI-compatible server) to run these",
)


def spec(episode_id: str, turns: int) -> EpisodeSpec:
    return EpisodeSpec(
        episode_id=episode_id,
        scenario="Two neighbours meet at the mailboxes; one gets the other's parcels.",
        agent_names=["Ada Brooks", "Ravi Nair"],
        agent_backgrounds=["Ada works from home.", "Ravi travels a lot for work."],
        agent_goals=[
            "Ask Ravi to pick up his parcels within a day from now on.",
            "Keep the friendly arrangement without promising anything.",
        ],
        max_turns=turns,
    )


def session() -> LLMSession:
    # A keyless local server needs no key; a small model on a CPU may take minutes for a
    # judge answer.
    config = LLMConfig(api_base=API_BASE, max_concurrency=1, timeout_s=900)
    return LLMSession(config)


async def test_a_real_episode_completes_and_is_rated() -> None:
    assert MODEL is not None
    use = session()
    episode_spec = spec("live-1", 4)
    record = await sa.arun(
        episode_spec,
        llm_agents_for(episode_spec, MODEL, use),
        judge=LLMJudge(MODEL, session=use),
        preflight=False,
    )
    assert record.status == "complete", record.reason
    assert record.verdict is not None and record.verdict.rated
    assert all(call.params.get("max_tokens") for call in use.calls)
