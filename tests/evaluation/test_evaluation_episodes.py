"""Rating whole episodes, the one way (a record and a judge): the judge reads the omniscient
log; played episodes and scripts end to end."""

from collections.abc import Callable
from pathlib import Path

import pytest
from _evaluation_support import judge_answer

import sotopia_are as sa
from sotopia_are.agents import ScriptedAgent
from sotopia_are.evaluation import GOAL_ONLY, SOTOPIA_EVAL, LLMJudge, RuleBasedTerminatedEvaluator
from sotopia_are.llm import LLMSession
from sotopia_are.messages import AgentAction, ScriptBackground, ScriptInteraction, render_script
from sotopia_are.record import give_verdict, record_of_result
from sotopia_are.social import EpisodeSpec, run_episode
from sotopia_are.testing import LocalLLMServer

MODEL = "openai/test-model"
BAKERY = Path(__file__).parents[2] / "examples" / "scripts" / "bakery_negotiation.txt"
GARDEN = ["Ana", "Ben", "Cleo"]


def say(text: str, to: list[str] | None = None) -> AgentAction:
    return AgentAction(action_type="speak", argument=text, to=to)


def garden_spec(**changes: object) -> EpisodeSpec:
    return EpisodeSpec.model_validate(
        {
            "episode_id": "garden-1",
            "scenario": "A garden committee decides where the new beds go.",
            "agent_names": GARDEN,
            "agent_backgrounds": ["the chair", "the treasurer", "a newcomer"],
            "agent_goals": ["keep the roses", "spend little", "get a vegetable bed"],
            "max_turns": 3,
            **changes,
        }
    )


def garden_agents() -> list[ScriptedAgent]:
    return [
        ScriptedAgent("Ana", [say("The roses stay where they are.")]),
        ScriptedAgent("Ben", [say("Ana, I'll back you if we skip the new fence.", to=["Ana"])]),
        ScriptedAgent("Cleo", [say("Could I have the sunny corner for vegetables?")]),
    ]


async def test_the_judge_reads_private_messages_marked_as_private(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    episode = await run_episode(garden_spec(), garden_agents())
    # Cleo never saw Ben's whisper; the judge does, marked as private.
    assert "skip the new fence" not in episode.transcript("Cleo")
    llm_server.enqueue(judge_answer({n: {"goal": 5} for n in GARDEN}))
    judge = LLMJudge(MODEL, GOAL_ONLY, session=make_session())
    verdict = await give_verdict(record_of_result(episode), judge)

    prompt = llm_server.chat_requests[0].messages[1]["content"]
    assert episode.transcript() in prompt  # the record's transcript is the run's
    assert (
        "Ben [private to ['Ana']] said: \"Ana, I'll back you if we skip the new fence.\"" in prompt
    )
    assert 'Cleo said: "Could I have the sunny corner for vegetables?"' in prompt
    for goal in garden_spec().agent_goals:  # every goal, though agents see only their own
        assert goal in prompt
    assert verdict.response().rates == {n: (5.0, {"goal": 5.0}) for n in GARDEN}
    assert [call.scope for call in verdict.evaluation.calls] == ["garden-1/judge"]
    assert verdict.termination_reason == "reached the maximum of 3 turns"
    assert verdict.response().terminated


async def test_a_run_with_its_evaluators_accounts_the_judge_calls(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(judge_answer({n: {"goal": 7} for n in GARDEN}))
    session = make_session()
    judge = LLMJudge(MODEL, GOAL_ONLY, session=session)
    rule = RuleBasedTerminatedEvaluator(max_turn_number=2)
    spec = garden_spec(max_turns=20)
    episode = await run_episode(spec, garden_agents(), termination_rules=[rule])
    record = record_of_result(episode)
    verdict = await give_verdict(record, judge, termination=rule)
    assert record.turns_played == 2  # the evaluator ended the run
    assert verdict.termination_reason == "reached the maximum of 2 turns"
    assert verdict.evaluation.calls == session.calls
    usage = record.with_verdict(verdict).usage
    assert usage.calls == 1  # scripted agents call no model; the judge called once
    assert usage.prompt_tokens == session.usage().prompt_tokens > 0


async def test_a_finished_episode_is_checked_against_its_own_limits_by_default(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    # Without a rule the verdict says what the runner said: the spec's limits ended it.
    episode = await run_episode(garden_spec(max_turns=2), garden_agents())
    llm_server.enqueue(judge_answer({n: {"goal": 7} for n in GARDEN}))
    judge = LLMJudge(MODEL, GOAL_ONLY, session=make_session())
    verdict = await give_verdict(record_of_result(episode), judge)
    assert episode.reason == verdict.termination_reason == "reached the maximum of 2 turns"


async def test_a_failed_episode_is_not_rated(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    agents = [*garden_agents()[:2], ScriptedAgent("Cleo", [])]  # Cleo runs out of lines
    judge = LLMJudge(MODEL, session=make_session())
    record = await sa.arun(garden_spec(), agents, judge=judge, preflight=False)
    assert record.status == "failed" and record.verdicts == ()
    assert record.failed_or_unrated
    with pytest.raises(ValueError, match="garden-1 is failed, not complete"):
        await give_verdict(record, judge)
    assert llm_server.chat_requests == []


async def test_a_human_written_script_end_to_end(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], bakery: ScriptBackground
) -> None:
    scores = {
        "Mara Quinn": dict.fromkeys(SOTOPIA_EVAL.dimension_names, 0) | {"goal": 8},
        "Teo Alvarez": dict.fromkeys(SOTOPIA_EVAL.dimension_names, 0) | {"goal": 6},
    }
    llm_server.enqueue(judge_answer(scores))
    script = BAKERY.read_text(encoding="utf-8")
    judge = LLMJudge(MODEL, session=make_session())
    record = await sa.arate_script(script, judge, bakery, preflight=False)
    assert record.status == "complete" and record.turns_played == 12
    assert (
        render_script(record.actions())
        == ScriptInteraction.from_actions(
            (a.speaker, a.action)
            for a in ScriptInteraction(interactions=script).actions(bakery.agent_names)
        ).interactions
    )
    prompt = llm_server.chat_requests[0].messages[1]["content"]
    assert 'Teo Alvarez said: "Deal. See you tomorrow at six forty-five."' in prompt
    assert "Teo Alvarez left the conversation" in prompt
    assert record.verdict is not None
    response = record.verdict.response()
    assert response.terminated  # Teo left: fewer than two agents remain
    assert response.p1_rate == (8 / 7, scores["Mara Quinn"])
    assert response.p2_rate == (6 / 7, scores["Teo Alvarez"])
    assert "Environment comments: fewer than two agents remain (Teo Alvarez left)" in (
        response.comments or ""
    )
