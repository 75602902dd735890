"""LLMAgent through litellm's real HTTP path against the local test server."""

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from agents_support import MODEL, make_turn
from schema_support import free_texts

from sotopia_are.agents import LLMAgent, llm_agents_for
from sotopia_are.agents.action_reply import (
    ACTION_FORM_TOKENS,
    ACTION_MAX_TOKENS,
    ARGUMENT_MAX_CHARS,
)
from sotopia_are.llm import (
    CHARS_PER_TOKEN,
    GenerationError,
    LLMSession,
    Recorder,
    Replayer,
    Sampling,
)
from sotopia_are.messages import AgentAction, ScriptBackground
from sotopia_are.social import EpisodeSpec, run_episode, run_episodes
from sotopia_are.social.protocol import SocialAgent
from sotopia_are.testing import LocalLLMServer, Reply

NAMES = ["Alice Park", "Bob Stone", "Carol Diaz"]
GOALS = [
    "Sell the old bike for at least 80 dollars.",
    "Buy a bike for under 50 dollars.",
    "Persuade Alice to donate the bike to the school.",
]


def background(viewer: str | None) -> ScriptBackground:
    """The context as ``viewer`` sees it (others' goals hidden); None: omniscient."""
    return ScriptBackground(
        scenario="A yard sale on a Saturday morning.",
        agent_names=NAMES,
        agent_backgrounds=[f"{name} lives on Elm Street." for name in NAMES],
        agent_goals=[
            goal if viewer in (None, name) else "Unknown"
            for name, goal in zip(NAMES, GOALS, strict=True)
        ],
    )


def prompt_text(server: LocalLLMServer, index: int = 0) -> str:
    return "\n".join(m["content"] for m in server.chat_requests[index].messages)


async def test_a_structured_reply_becomes_the_action(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue('{"action_type": "speak", "argument": "Nice bike, how much?"}')
    agent = LLMAgent("Bob Stone", MODEL, make_session())
    assert isinstance(agent, SocialAgent)
    action = await agent.act(make_turn("Bob Stone", background("Bob Stone")))
    assert action == AgentAction(action_type="speak", argument="Nice bike, how much?")
    [call] = agent.call_records()
    assert call.ok and call.template == "agent_action.j2" and call.output_type == "AgentAction"
    assert call.parsed == {"action_type": "speak", "argument": "Nice bike, how much?", "to": None}


async def test_the_schema_sent_bounds_the_argument_so_an_answer_fits_max_tokens(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue('{"action_type": "speak", "argument": "Nice bike, how much?"}')
    agent = LLMAgent("Bob Stone", MODEL, make_session())
    await agent.act(make_turn("Bob Stone", background("Bob Stone")))
    body = llm_server.chat_requests[0].body
    # The one free text is bounded, so a server decoding under the schema (llama.cpp's
    # grammar) closes the JSON in time; at 3 characters a token it fits the budget.
    [argument] = free_texts(body["response_format"]["json_schema"]["schema"])
    assert argument["maxLength"] == ARGUMENT_MAX_CHARS
    assert ARGUMENT_MAX_CHARS / CHARS_PER_TOKEN + 60 <= body["max_tokens"] == ACTION_MAX_TOKENS


@pytest.mark.parametrize("max_tokens", [61, 100, ACTION_MAX_TOKENS - 1, ACTION_MAX_TOKENS, 4000])
async def test_the_agent_s_own_max_tokens_below_the_budget_cuts_the_argument_s_bound(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], max_tokens: int
) -> None:
    """A study's ``max_tokens=100`` for short turns: the bound shrinks with it, so a server
    decoding under the schema closes the JSON within the 100 tokens instead of running
    out in the middle of the utterance (no answer at all). A larger one leaves it."""
    llm_server.enqueue('{"action_type": "speak", "argument": "Nice bike, how much?"}')
    agent = LLMAgent("Bob Stone", MODEL, make_session(), sampling=Sampling(max_tokens=max_tokens))
    await agent.act(make_turn("Bob Stone", background("Bob Stone")))
    body = llm_server.chat_requests[0].body
    assert body["max_tokens"] == max_tokens
    [argument] = free_texts(body["response_format"]["json_schema"]["schema"])
    if max_tokens >= ACTION_MAX_TOKENS:
        assert argument["maxLength"] == ARGUMENT_MAX_CHARS
    else:
        # The argument's tokens at its longest and the rest of the answer fit; the
        # argument takes all that the rest leaves, to the character (at 3 a token).
        room = max_tokens - ACTION_FORM_TOKENS
        assert argument["maxLength"] / CHARS_PER_TOKEN + ACTION_FORM_TOKENS <= max_tokens
        assert argument["maxLength"] >= room * CHARS_PER_TOKEN - 1 > 0


async def test_an_argument_longer_than_the_schema_bound_is_accepted(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    """The bound is for servers that decode under the schema; a longer utterance from one
    that does not enforce it is the action as before (lenient in form)."""
    speech = "I can pay cash today, and I will pick it up myself. " * 60
    assert len(speech) > 3 * ARGUMENT_MAX_CHARS
    llm_server.enqueue(json.dumps({"action_type": "speak", "argument": speech}))
    agent = LLMAgent("Bob Stone", MODEL, make_session())
    action = await agent.act(make_turn("Bob Stone", background("Bob Stone")))
    assert action == AgentAction(action_type="speak", argument=speech)
    [call] = agent.call_records()
    assert call.ok and not call.repaired and not call.normalized
    assert len(llm_server.chat_requests) == 1


async def test_a_private_action_keeps_its_recipients(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(
        json.dumps({"action_type": "speak", "argument": "Psst, bid low.", "to": ["Bob Stone"]})
    )
    agent = LLMAgent("Carol Diaz", MODEL, make_session())
    action = await agent.act(make_turn("Carol Diaz", background("Carol Diaz")))
    assert action.to == ["Bob Stone"] and action.argument == "Psst, bid low."
    prompt = prompt_text(llm_server)
    assert "chosen from: Alice Park, Bob Stone." in prompt


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (
            {"action_type": "speak", "argument": "hi", "to": ["Zed"]},
            "unknown recipient 'Zed' of a private message from 'Alice Park'; "
            "allowed recipients: ['Bob Stone', 'Carol Diaz']",
        ),
        (
            {"action_type": "speak", "argument": "hi", "to": ["Alice Park"]},
            "'Alice Park' cannot send a private message to themselves",
        ),
        (
            {"action_type": "leave", "argument": ""},
            "'leave' is not available now; choose one of ['none', 'speak']",
        ),
    ],
)
async def test_an_invalid_action_is_sent_back_with_the_error(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    bad: dict[str, object],
    error: str,
) -> None:
    llm_server.enqueue(json.dumps(bad), '{"action_type": "speak", "argument": "Hello all."}')
    agent = LLMAgent("Alice Park", MODEL, make_session())
    turn = make_turn("Alice Park", background("Alice Park"), available_actions=("none", "speak"))
    action = await agent.act(turn)
    assert action == AgentAction(action_type="speak", argument="Hello all.")
    retry = llm_server.chat_requests[1].messages
    assert retry[-2] == {"role": "assistant", "content": json.dumps(bad)}
    assert error in retry[-1]["content"]
    [call] = agent.call_records()
    assert [a.error_kind for a in call.attempts] == ["invalid_output", None]


async def test_malformed_output_is_a_generation_error_never_did_nothing(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue("I'd rather not.", "{not json", '{"action_type": "dance"}')
    agent = LLMAgent("Alice Park", MODEL, make_session(output_attempts=3))
    with pytest.raises(GenerationError, match="no valid AgentAction in 3 answers") as caught:
        await agent.act(make_turn("Alice Park", background("Alice Park")))
    assert [a.raw_text for a in caught.value.attempts] == [
        "I'd rather not.",
        "{not json",
        '{"action_type": "dance"}',
    ]
    [call] = agent.call_records()
    assert call is caught.value.call and not call.ok and call.error_type == "GenerationError"


async def test_the_prompt_shows_the_own_goal_and_hides_the_others(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    reply = '{"action_type": "none", "argument": ""}'
    llm_server.enqueue(reply, reply)
    session = make_session()
    await LLMAgent("Bob Stone", MODEL, session).act(make_turn("Bob Stone", background("Bob Stone")))
    await LLMAgent("Bob Stone", MODEL, session).act(make_turn("Bob Stone", background(None)))
    masked, omniscient = prompt_text(llm_server, 0), prompt_text(llm_server, 1)
    assert "You play Bob Stone in a conversation" in masked
    assert "Bob Stone's goal: Buy a bike for under 50 dollars." in masked
    assert GOALS[0] not in masked and GOALS[2] not in masked
    assert all(goal in omniscient for goal in GOALS)


async def test_the_prompt_holds_only_what_the_turn_shows(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    """Agents keep no memory of their own: what another agent was told privately never
    reaches this agent's prompt, even through a shared session."""
    secret = "I found the receipt: it cost 30 dollars."
    reply = '{"action_type": "speak", "argument": "ok"}'
    llm_server.enqueue(reply, reply)
    session = make_session()
    alice_sees = (
        'Turn #1: Bob Stone said: "Morning!"\n'
        f"Turn #2: Carol Diaz [private to ['Alice Park']] said: \"{secret}\""
    )
    bob_sees = 'Turn #1: Bob Stone said: "Morning!"\nTurn #2: Carol Diaz did nothing'
    alice = LLMAgent("Alice Park", MODEL, session)
    bob = LLMAgent("Bob Stone", MODEL, session)
    await alice.act(make_turn("Alice Park", background("Alice Park"), transcript=alice_sees))
    await bob.act(make_turn("Bob Stone", background("Bob Stone"), transcript=bob_sees))
    assert secret in prompt_text(llm_server, 0)
    bob_prompt = prompt_text(llm_server, 1)
    assert secret not in bob_prompt and "Turn #2: Carol Diaz did nothing" in bob_prompt
    assert len(session.calls) == 2
    assert alice.call_records() == [session.calls[0]] and bob.call_records() == [session.calls[1]]


async def test_an_agent_refuses_another_agents_turn(
    make_session: Callable[..., LLMSession],
) -> None:
    agent = LLMAgent("Alice Park", MODEL, make_session())
    with pytest.raises(ValueError, match="was given the turn of 'Bob Stone'"):
        await agent.act(make_turn("Bob Stone", background("Bob Stone")))
    assert agent.call_records() == []


async def test_llm_agents_play_an_episode_through_the_runner(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(
        '{"action_type": "speak", "argument": "Ten dollars?"}',
        '{"action_type": "speak", "argument": "Psst: say no.", "to": ["Alice Park"]}',
        '{"action_type": "leave", "argument": ""}',
    )
    session = make_session()
    spec = EpisodeSpec(
        scenario="A yard sale on a Saturday morning.",
        agent_names=["Bob Stone", "Carol Diaz", "Alice Park"],
        agent_backgrounds=["", "", ""],
        agent_goals=[GOALS[1], GOALS[2], GOALS[0]],
        max_turns=3,
    )
    agents = [LLMAgent(name, MODEL, session) for name in spec.agent_names]
    result = await run_episode(spec, agents)
    assert result.status == "complete", result.reason
    assert [a.action_type for _, a in result.actions()] == ["speak", "speak", "leave"]
    alice_prompt = prompt_text(llm_server, 2)
    assert "Psst: say no." in alice_prompt and "Ten dollars?" in alice_prompt
    assert GOALS[0] in alice_prompt and GOALS[1] not in alice_prompt
    assert result.call_records["Alice Park"] == (session.calls[2],)


def yard_sale(episode_id: str) -> EpisodeSpec:
    return EpisodeSpec(
        episode_id=episode_id,
        scenario="A yard sale on a Saturday morning.",
        agent_names=["Alice Park", "Bob Stone"],
        agent_backgrounds=["", ""],
        agent_goals=[GOALS[0], GOALS[1]],
        max_turns=2,
    )


def say(text: str) -> str:
    return json.dumps({"action_type": "speak", "argument": text})


async def test_an_agent_plays_one_episode_and_reports_only_its_calls(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = lambda _body: say("Hello.")
    session = make_session()
    first = await run_episode(
        yard_sale("first"), llm_agents_for(yard_sale("first"), MODEL, session)
    )
    second = await run_episode(
        yard_sale("second"), llm_agents_for(yard_sale("second"), MODEL, session)
    )
    assert first.status == second.status == "complete"
    for result in (first, second):
        calls = [call for calls in result.call_records.values() for call in calls]
        assert len(calls) == 2
        assert {call.scope for call in calls} == {
            f"{result.episode_id}/Alice Park",
            f"{result.episode_id}/Bob Stone",
        }
    assert len(session.calls) == 4  # the batch session sees every episode's calls

    reused = [LLMAgent(name, MODEL, session) for name in ("Alice Park", "Bob Stone")]
    again = await run_episode(yard_sale("third"), reused)
    assert again.status == "complete"
    once_more = await run_episode(yard_sale("fourth"), reused)
    assert once_more.status == "failed"
    assert once_more.reason is not None and "plays one episode" in once_more.reason
    assert len(again.call_records["Alice Park"]) == 1  # the first episode's records stand


async def test_concurrent_episodes_with_identical_prompts_replay_their_own_answers(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], tmp_path: Path
) -> None:
    """Both episodes send the same first prompt; the first to arrive is answered last, so
    the recording's order is not the request order. Replay still gives each episode its
    own answers, through the per-episode scopes of llm_agents_for."""
    recording = tmp_path / "batch.jsonl"
    llm_server.enqueue(Reply.text(say("answer-0"), delay=0.3), Reply.text(say("answer-1")))
    llm_server.rule = lambda _body: say("later")
    specs = [yard_sale("episode-a"), yard_sale("episode-b")]
    models = {"Alice Park": MODEL, "Bob Stone": MODEL}
    with Recorder(recording) as recorder:
        batch = make_session({"recorder": recorder})
        recorded = await run_episodes(specs, lambda spec: llm_agents_for(spec, models, batch))
    openers = sorted(result.actions()[0][1].argument for result in recorded)
    assert openers == ["answer-0", "answer-1"]

    replay = make_session({"replayer": Replayer(recording)})
    replayed = await run_episodes(specs, lambda spec: llm_agents_for(spec, models, replay))
    assert [r.canonical_log() for r in replayed] == [r.canonical_log() for r in recorded]
    assert replay.replayer is not None and replay.replayer.remaining == 0


def test_llm_agents_for_needs_a_model_for_everyone(make_session: Callable[..., LLMSession]) -> None:
    with pytest.raises(ValueError, match=r"no model for \['Bob Stone'\]"):
        llm_agents_for(yard_sale("x"), {"Alice Park": MODEL}, make_session())


async def test_each_turn_shows_the_background_it_was_given(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    # An agent renders its background once per episode: a turn with another background
    # object (another view, or another context) is shown that one.
    llm_server.enqueue(*['{"action_type": "speak", "argument": "Hello."}'] * 3)
    agent = LLMAgent("Bob Stone", MODEL, make_session())
    own, moved = background("Bob Stone"), background("Bob Stone")
    moved.scenario = "A flea market on a Sunday afternoon."
    for number, shown in enumerate([own, own, moved], start=1):
        await agent.act(make_turn("Bob Stone", shown, turn_number=number))
    prompts = [prompt_text(llm_server, index) for index in range(3)]
    assert prompts[0] == prompts[1].replace("turn 2", "turn 1")
    assert "yard sale" in prompts[1] and "flea market" in prompts[2]
