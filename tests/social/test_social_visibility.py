"""Visibility: one function decides; views, backgrounds and prompts go through it."""

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from social_support import MODEL, NAMES, PlaybackAgent, make_spec, say

from sotopia_are.agents import LLMAgent
from sotopia_are.llm import LLMConfig, LLMSession, RetryPolicy
from sotopia_are.messages import AgentAction
from sotopia_are.social import HIDDEN_GOAL, EpisodeSpec, is_visible, run_episode
from sotopia_are.testing import LocalLLMServer

MIRA, TOMAS, PRIYA = NAMES


def test_is_visible_public_sender_or_recipient() -> None:
    assert is_visible("Bo", "Ana", None) and is_visible("Bo", "Ana", [])
    assert is_visible("Ana", "Ana", ["Cy"])
    assert is_visible("Cy", "Ana", ["Cy"]) and is_visible("Cy", "Ana", ("Bo", "Cy"))
    assert not is_visible("Bo", "Ana", ["Cy"])


async def test_private_actions_and_env_events_reach_only_their_audience() -> None:
    spec = make_spec(
        3,
        max_turns=6,
        env_events=[
            {"turn": 1, "content": "Tomas's phone buzzes.", "to": [TOMAS]},
            {"turn": 2, "kind": "message", "sender": "Dee", "content": "bid high", "to": [PRIYA]},
        ],
    )
    agents = [
        PlaybackAgent(MIRA, [say("Hello!"), say("I will outbid Priya.", [TOMAS])]),
        PlaybackAgent(TOMAS, [say("Hi.")]),
        PlaybackAgent(PRIYA, [say("Evening.")]),
    ]
    result = await run_episode(spec, agents)
    secret = "I will outbid Priya."
    assert secret in result.transcript(MIRA) and secret in result.transcript(TOMAS)
    assert secret not in result.transcript(PRIYA)
    assert all(secret not in t.transcript + t.observation.last_turn for t in agents[2].turns)
    assert "phone buzzes" in result.transcript(TOMAS)
    assert "phone buzzes" not in result.transcript(MIRA) + result.transcript(PRIYA)
    assert "[message from Dee to ['Priya Nair']] bid high" in result.transcript(PRIYA)
    evaluator = result.transcript()
    assert f"{MIRA} [private to ['{TOMAS}']] said: \"{secret}\"" in evaluator
    assert f"[environment, perceived by ['{TOMAS}']] Tomas's phone buzzes." in evaluator


async def test_turn_zero_shows_the_background_and_later_turns_what_is_new() -> None:
    agents = [PlaybackAgent(MIRA, [say("one"), say("three")]), PlaybackAgent(TOMAS, [say("two")])]
    await run_episode(make_spec(max_turns=3), agents)
    first, third = agents[0].turns
    assert first.observation.last_turn.startswith("Here is the context of this interaction:")
    assert third.observation.last_turn == f'{TOMAS} said: "two"'
    assert third.observation.turn_number == third.turn_number == 2
    assert third.transcript == f'Turn #0: {MIRA} said: "one"\nTurn #1: {TOMAS} said: "two"'


async def test_others_goals_are_hidden_unless_omniscient() -> None:
    for omniscient in (False, True):
        agents = [PlaybackAgent(MIRA), PlaybackAgent(TOMAS)]
        await run_episode(make_spec(max_turns=2, omniscient=omniscient), agents)
        goals = agents[0].turns[0].background.agent_goals
        assert goals[0] == f"secret goal of {MIRA}"
        assert goals[1] == (f"secret goal of {TOMAS}" if omniscient else HIDDEN_GOAL)


# --- the property: no private text ever reaches a non-recipient ------------------------

Plan = dict[str, list[AgentAction]]


@st.composite
def episodes(draw: st.DrawFn) -> tuple[EpisodeSpec, Plan]:
    """A spec and, per agent, the actions it will choose; every text is a unique token."""
    count = draw(st.integers(2, 3))
    names = NAMES[:count]
    policy = draw(st.sampled_from(["round-robin", "simultaneous", "random"]))
    turns = draw(st.integers(1, 6))
    tokens = iter(range(1000))
    plan: Plan = {}
    for name in names:
        actions = []
        for _ in range(turns):
            others = [n for n in names if n != name]
            to = draw(
                st.one_of(st.none(), st.lists(st.sampled_from(others), min_size=1, unique=True))
            )
            kind = draw(st.sampled_from(["speak", "action", "non-verbal communication", "none"]))
            text = f"tok{next(tokens)}-{name.split()[0]}" if kind != "none" else ""
            actions.append(AgentAction(action_type=kind, argument=text, to=to))
        plan[name] = actions
    env_events = [
        {
            "turn": draw(st.integers(0, turns)),
            "content": f"env{i}",
            "to": [draw(st.sampled_from(names))],
        }
        for i in range(draw(st.integers(0, 2)))
    ]
    spec = make_spec(
        count,
        turn_policy=policy,
        max_turns=turns,
        seed=draw(st.integers(0, 99)),
        env_events=env_events,
    )
    return spec, plan


def private_texts(plan: Plan, spec: EpisodeSpec) -> list[tuple[str, set[str]]]:
    """Each private text and who may see it."""
    secrets = [
        (action.argument, {sender, *action.to})
        for sender, actions in plan.items()
        for action in actions
        if action.to and action.argument
    ]
    secrets += [(e.content, set(e.to)) for e in spec.env_events if e.to]
    return secrets


@settings(max_examples=60, deadline=None)
@given(episodes())
def test_property_no_private_text_in_a_non_recipients_view(case: tuple[EpisodeSpec, Plan]) -> None:
    spec, plan = case
    agents = [PlaybackAgent(name, list(actions)) for name, actions in plan.items()]
    result = asyncio.run(run_episode(spec, agents))
    for text, audience in private_texts(plan, spec):
        for agent in agents:
            shown = "\n".join(t.transcript + "\n" + t.observation.last_turn for t in agent.turns)
            assert (text in shown) <= (agent.name in audience), (text, agent.name)
            assert (text in result.transcript(agent.name)) <= (agent.name in audience)


def scripted_reply(plan: Mapping[str, list[AgentAction]]) -> Any:
    """A server rule answering each agent's prompt with that agent's next planned action."""
    queues = {name: list(actions) for name, actions in plan.items()}

    def rule(body: Mapping[str, Any]) -> str:
        system = body["messages"][0]["content"]
        name = next(n for n in queues if system.startswith(f"You play {n} in a conversation"))
        action = queues[name].pop(0)
        return json.dumps(action.model_dump())

    return rule


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(episodes())
def test_property_no_private_text_reaches_a_non_recipients_prompt(
    llm_server: LocalLLMServer, case: tuple[EpisodeSpec, Plan]
) -> None:
    spec, plan = case
    llm_server.rule = scripted_reply(plan)
    llm_server.reset_stats()
    before = len(llm_server.chat_requests)
    session = LLMSession(
        LLMConfig(
            api_base=llm_server.url,
            api_key="sk-test",
            timeout_s=5.0,
            retry=RetryPolicy(max_attempts=1),
        )
    )
    agents = [LLMAgent(name, MODEL, session) for name in spec.agent_names]
    result = asyncio.run(run_episode(spec, agents))
    assert result.status == "complete", result.reason
    assert len(result.actions()) == sum(len(c) for c in result.call_records.values())
    prompts = [
        (request.messages[0]["content"], "\n".join(m["content"] for m in request.messages))
        for request in llm_server.chat_requests[before:]
    ]
    assert len(prompts) == len(result.actions())
    for text, audience in private_texts(plan, spec):
        for system, prompt in prompts:
            viewer = next(
                n for n in spec.agent_names if system.startswith(f"You play {n} in a conversation")
            )
            if viewer not in audience:
                assert text not in prompt, (text, viewer)
