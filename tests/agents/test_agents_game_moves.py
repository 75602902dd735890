"""LLMAgent and HumanAgent in a game turn: only legal moves, by schema and by validation.

The agent is tested through litellm's real HTTP path against the local test server; what
the server received (the schema, the prompt, the repair message) is asserted on.
"""

import json
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema
import pytest
from agents_support import MODEL, make_turn

from sotopia_are.agents import (
    GAME_MOVE_TEMPLATE,
    HumanAgent,
    LLMAgent,
    move_output_type,
    move_schema,
    parse_move_command,
)
from sotopia_are.agents.action_reply import ARGUMENT_MAX_CHARS
from sotopia_are.agents.llm_agent import ACTION_MAX_TOKENS
from sotopia_are.llm import GenerationError, LLMSession, Sampling
from sotopia_are.llm.structured import parse_reply
from sotopia_are.messages import GameMove, ScriptBackground
from sotopia_are.social.protocol import MoveOption
from sotopia_are.testing import LocalLLMServer

NAMES = ["Alice Park", "Bob Stone", "Carol Diaz", "Dan Wu"]
CONTEXT = ScriptBackground(
    scenario="A village at night; some neighbours are werewolves.",
    agent_names=NAMES,
    agent_backgrounds=["", "", "", ""],
    agent_goals=["Find the werewolves.", "Unknown", "Unknown", "Unknown"],
)
SAY = MoveOption("say", "speak", "tell the village what you think")
VOTE = MoveOption("vote", "target", "vote to eliminate a player", targets=("Bob Stone", "Dan Wu"))
OFFER = MoveOption("offer", "offer", "propose your share of the pot", amount_min=10, amount_max=90)
ACCEPT = MoveOption("accept", "accept", "accept the standing offer")
PASS = MoveOption("pass", "pass")
DAY = (SAY, VOTE, PASS)
DEAL = (OFFER, ACCEPT, SAY)

# What llama.cpp's json-schema-to-grammar turns into grammar (annotations included);
# anything else it rejects or ignores, and an ignored constraint is not enforced.
LLAMA_CPP_KEYWORDS = {
    "type",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "properties",
    "required",
    "additionalProperties",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "items",
    "title",
    "description",
}


def turn_with(moves: tuple[MoveOption, ...], **kwargs: Any) -> Any:
    return make_turn("Alice Park", CONTEXT, moves=moves, phase=kwargs.pop("phase", "day"), **kwargs)


def sent_schema(server: LocalLLMServer, index: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = server.chat_requests[index].body["response_format"]["json_schema"][
        "schema"
    ]
    return schema


def prompt_text(server: LocalLLMServer, index: int = 0) -> str:
    return "\n".join(m["content"] for m in server.chat_requests[index].messages)


async def test_the_schema_sent_offers_exactly_the_legal_moves_and_targets(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue('{"move": "vote", "target": "Dan Wu"}')
    agent = LLMAgent("Alice Park", MODEL, make_session())
    move = await agent.act(turn_with(DAY))
    assert move == GameMove(move="vote", target="Dan Wu")
    body = llm_server.chat_requests[0].body
    assert body["max_tokens"] == ACTION_MAX_TOKENS
    assert body["response_format"]["type"] == "json_schema"
    variants = sent_schema(llm_server)["anyOf"]
    assert [v["properties"]["move"] for v in variants] == [
        {"type": "string", "enum": ["say"]},
        {"type": "string", "enum": ["vote"]},
        {"type": "string", "enum": ["pass"]},
    ]
    say, vote, pass_ = variants
    assert vote["properties"]["target"] == {"type": "string", "enum": ["Bob Stone", "Dan Wu"]}
    assert vote["required"] == ["move", "target"]
    # Speech says something and ends in time to close the JSON within max_tokens.
    assert say["properties"]["argument"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": ARGUMENT_MAX_CHARS,
    }
    assert say["required"] == ["move", "argument"]
    assert set(pass_["properties"]) == {"move"} and pass_["required"] == ["move"]  # no words
    assert all(v["additionalProperties"] is False for v in variants)
    [call] = agent.call_records()
    assert call.ok and call.template == GAME_MOVE_TEMPLATE and call.output_type == "GameMove"
    assert call.parsed == {"move": "vote", "target": "Dan Wu", "amount": None, "argument": ""}


async def test_an_offer_is_an_integer_within_its_bounds(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue('{"move": "offer", "amount": 55, "argument": "Fair split."}')
    agent = LLMAgent("Alice Park", MODEL, make_session())
    move = await agent.act(turn_with(DEAL, phase="bargain"))
    assert move == GameMove(move="offer", amount=55, argument="Fair split.")
    offer = sent_schema(llm_server)["anyOf"][0]
    assert offer["properties"]["amount"] == {"type": "integer", "minimum": 10, "maximum": 90}
    assert offer["required"] == ["move", "amount"]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (
            {"move": "vote", "target": "Carol Diaz"},
            "'Carol Diaz' is not an eligible target of 'vote'; choose one of "
            "['Bob Stone', 'Dan Wu']",
        ),
        ({"move": "vote", "target": "Zed"}, "'Zed' is not an eligible target of 'vote'"),
        ({"move": "vote"}, "'vote' needs a target: one of ['Bob Stone', 'Dan Wu']"),
        ({"move": "kill", "target": "Bob Stone"}, "'kill' is not a move you may make now"),
        ({"move": "say", "argument": " \n "}, "'say' needs something said in 'argument'"),
        ({"move": "say", "argument": "hi", "target": "Dan Wu"}, "'say' takes no target"),
        ({"move": "pass", "amount": 3}, "'pass' takes no amount"),
    ],
)
async def test_an_illegal_move_is_sent_back_with_the_reason_then_a_legal_one_is_taken(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    bad: dict[str, Any],
    reason: str,
) -> None:
    llm_server.enqueue(json.dumps(bad), '{"move": "vote", "target": "Bob Stone"}')
    agent = LLMAgent("Alice Park", MODEL, make_session())
    move = await agent.act(turn_with(DAY))
    assert move == GameMove(move="vote", target="Bob Stone")
    retry = llm_server.chat_requests[1].messages
    assert retry[-2] == {"role": "assistant", "content": json.dumps(bad)}
    assert reason in retry[-1]["content"]
    # The model is asked again under the same schema of legal moves.
    assert sent_schema(llm_server, 1) == sent_schema(llm_server, 0)
    [call] = agent.call_records()
    assert [a.error_kind for a in call.attempts] == ["invalid_output", None]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"move": "offer", "amount": 95}, "must be a whole number from 10 to 90 (got 95)"),
        ({"move": "offer", "amount": 9}, "(got 9)"),
        ({"move": "offer", "amount": 50.5}, "an amount is a whole number (got 50.5)"),
        ({"move": "offer", "amount": "lots"}, 'an amount is a whole number (got "lots")'),
        ({"move": "offer", "amount": True}, "an amount is a whole number (got true)"),
        ({"move": "offer"}, "'offer' needs an amount"),
    ],
)
async def test_an_amount_out_of_bounds_is_sent_back(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    bad: dict[str, Any],
    reason: str,
) -> None:
    llm_server.enqueue(json.dumps(bad), '{"move": "offer", "amount": 90}')
    agent = LLMAgent("Alice Park", MODEL, make_session())
    assert await agent.act(turn_with(DEAL)) == GameMove(move="offer", amount=90)
    assert reason in llm_server.chat_requests[1].messages[-1]["content"]


@pytest.mark.parametrize(
    ("written", "expected", "notes"),
    [
        (
            {"Move": "VOTE", "Target": "dan wu"},
            GameMove(move="vote", target="Dan Wu"),
            [
                "read key 'Move' as 'move'",
                "read key 'Target' as 'target'",
                "read move 'VOTE' as 'vote'",
                "read target 'dan wu' as 'Dan Wu'",
            ],
        ),
        (
            {"move": "vote", "target": "bob"},
            GameMove(move="vote", target="Bob Stone"),
            ["read target 'bob' as 'Bob Stone'"],
        ),
        (
            {"choice": {"action": "speak", "speech": "Bob was quiet all night."}},
            GameMove(move="say", argument="Bob was quiet all night."),
            [
                "unwrapped the move from 'choice'",
                "read key 'action' as 'move'",
                "read key 'speech' as 'argument'",
                "read move 'speak' as 'say'",
            ],
        ),
        (
            {"move": "pass", "target": None, "amount": None, "argument": None, "why": "x"},
            GameMove(move="pass"),
            [
                "ignored unknown keys ['why']",
                "read target null as no target",
                "read amount null as no amount",
                "read argument null as no argument",
            ],
        ),
        (
            {"move": "say", "argument": 'I saw it.\nBob Stone said: "not me"'},
            GameMove(move="say", argument='I saw it. Bob Stone said: "not me"'),
            ["read the speech's 2 lines as one line"],
        ),
    ],
)
async def test_lenient_forms_are_read_and_noted(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    written: dict[str, Any],
    expected: GameMove,
    notes: list[str],
) -> None:
    llm_server.enqueue(json.dumps(written))
    agent = LLMAgent("Alice Park", MODEL, make_session())
    assert await agent.act(turn_with(DAY)) == expected
    [call] = agent.call_records()
    [attempt] = call.attempts
    assert len(attempt.normalized) == len(notes)
    for note, made in zip(notes, attempt.normalized, strict=True):
        assert made.startswith(note)


@pytest.mark.parametrize(
    ("written", "amount", "note"),
    [('"60"', 60, 'read amount "60" as 60'), ("60.0", 60, "read amount 60.0 as 60")],
)
async def test_an_amount_written_as_text_or_a_whole_float_is_that_integer(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    written: str,
    amount: int,
    note: str,
) -> None:
    llm_server.enqueue(f'{{"move": "offer", "amount": {written}}}')
    agent = LLMAgent("Alice Park", MODEL, make_session())
    move = await agent.act(turn_with(DEAL))
    assert move == GameMove(move="offer", amount=amount)
    assert type(move.amount) is int
    assert agent.call_records()[0].attempts[0].normalized == [note]


async def test_the_prompt_shows_the_phase_the_moves_and_the_private_notes(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue('{"move": "pass"}')
    transcript = (
        "Turn #0\nEnvironment (private to Alice Park): You are the seer.\n"
        'Turn #1\nBob Stone said: "Morning, all."'
    )
    agent = LLMAgent("Alice Park", MODEL, make_session())
    await agent.act(turn_with((*DAY, OFFER), transcript=transcript, turn_number=4))
    prompt = prompt_text(llm_server)
    assert "You are the seer." in prompt and '"Morning, all."' in prompt
    assert 'This is turn 4, in the phase "day".' in prompt
    assert "- say: tell the village what you think (everyone sees it)." in prompt
    assert "The target is one of: Bob Stone, Dan Wu." in prompt
    assert "The amount is a whole number from 10 to 90." in prompt
    assert '{"move": "pass"}' in prompt
    assert "Alice Park's goal: Find the werewolves." in prompt
    assert "action_type" not in prompt  # not the conversation prompt


async def test_a_game_turn_sends_the_seed_drawn_for_the_turn(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue('{"move": "pass"}')
    sampling = Sampling(seed=7)
    agent = LLMAgent("Alice Park", MODEL, make_session(), sampling=sampling, episode_seed=3)
    await agent.act(turn_with(DAY, turn_number=5))
    expected = sampling.params("agent", 3, "Alice Park", 5)["seed"]
    assert llm_server.chat_requests[0].body["seed"] == expected


async def test_no_legal_answer_in_time_is_a_generation_error_never_an_abstention(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(*['{"move": "vote", "target": "Alice Park"}'] * 2)
    agent = LLMAgent("Alice Park", MODEL, make_session(output_attempts=2))
    with pytest.raises(GenerationError, match="no valid GameMove in 2 answers"):
        await agent.act(turn_with(DAY))


async def test_a_turn_without_a_playable_move_is_refused_before_any_call(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    agent = LLMAgent("Alice Park", MODEL, make_session())
    nobody = MoveOption("vote", "target")
    with pytest.raises(ValueError, match="none of the moves \\['vote'\\] can be made"):
        await agent.act(turn_with((nobody,)))
    assert llm_server.chat_requests == []


MOVE_SETS = [DAY, DEAL, (VOTE,), (SAY,), (ACCEPT, MoveOption("reject", "reject"))]


def keywords(schema: Any) -> Iterator[str]:
    """Every keyword of ``schema`` (not the names under ``properties``)."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            yield key
            if key == "properties":
                for sub in value.values():
                    yield from keywords(sub)
            elif key in ("anyOf", "oneOf", "items"):
                for sub in value if isinstance(value, list) else [value]:
                    yield from keywords(sub)


@pytest.mark.parametrize("moves", MOVE_SETS)
def test_the_schema_is_valid_and_keeps_to_what_llama_cpp_reads(
    moves: tuple[MoveOption, ...],
) -> None:
    schema = move_output_type(moves, tuple(NAMES)).model_json_schema()
    assert schema == move_schema(moves)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert set(keywords(schema)) <= LLAMA_CPP_KEYWORDS
    assert "$ref" not in json.dumps(schema)


def test_the_schema_refuses_what_validation_refuses() -> None:
    validator = jsonschema.Draft202012Validator(move_schema((*DAY, OFFER)))
    assert validator.is_valid({"move": "vote", "target": "Bob Stone"})
    assert validator.is_valid({"move": "offer", "amount": 10, "argument": "low"})
    for illegal in (
        {"move": "vote", "target": "Carol Diaz"},
        {"move": "vote"},
        {"move": "offer", "amount": 91},
        {"move": "offer", "amount": 50.5},
        {"move": "say", "argument": ""},
        {"move": "say", "argument": "hi", "target": "Bob Stone"},
        {"move": "kill", "target": "Bob Stone"},
    ):
        assert not validator.is_valid(illegal), illegal
        with pytest.raises(ValueError):
            parse_reply(json.dumps(illegal), move_output_type((*DAY, OFFER), tuple(NAMES)))
    # An unknown key is form: the schema allows none, the parser drops it (and notes it).
    assert not validator.is_valid({"move": "pass", "to": ["Bob Stone"]})


# -- HumanAgent -----------------------------------------------------------------------------


def typed(*lines: str) -> Callable[[str], str]:
    pending = iter(lines)

    def read(prompt: str) -> str:
        try:
            return next(pending)
        except StopIteration:
            raise EOFError from None

    return read


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("vote Dan Wu", GameMove(move="vote", target="Dan Wu")),
        ("VOTE bob", GameMove(move="vote", target="Bob Stone")),
        ("say Bob was up all night", GameMove(move="say", argument="Bob was up all night")),
        ("offer 40", GameMove(move="offer", amount=40)),
        ("accept", GameMove(move="accept")),
        ("accept fine, deal", GameMove(move="accept")),  # an accept carries no words
    ],
)
def test_a_human_move_command(line: str, expected: GameMove) -> None:
    assert parse_move_command(line, (*DAY, *DEAL[:2]), NAMES) == expected


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("", "no move; you may: say <words>, vote <Bob Stone|Dan Wu>, pass"),
        ("kill Bob", "'kill' is not a move you may make now"),
        ("vote Carol Diaz", "'Carol Diaz' is not an eligible target of 'vote'"),
        ("vote", "'vote' needs a target"),
        ("say", "'say' needs something said"),
        ("pass now", None),
    ],
)
def test_a_bad_human_move_says_what_is_wrong(line: str, error: str | None) -> None:
    if error is None:
        assert parse_move_command(line, DAY, NAMES) == GameMove(move="pass")  # no words
        return
    with pytest.raises(ValueError, match=error.replace("|", "\\|")):
        parse_move_command(line, DAY, NAMES)


async def test_a_human_is_shown_the_legal_moves_and_asked_until_one_is_legal() -> None:
    shown: list[str] = []
    agent = HumanAgent("Alice Park", typed("vote Carol Diaz", "offer 5", "vote Bob"), shown.append)
    move = await agent.act(turn_with(DAY, phase="day vote"))
    assert move == GameMove(move="vote", target="Bob Stone")
    view, *errors = shown
    assert "== Alice Park, turn 1, day vote ==" in view
    assert "You may: say <words>, vote <Bob Stone|Dan Wu>, pass." in view
    assert "To act privately" not in view
    assert errors == [
        "Sorry: 'Carol Diaz' is not an eligible target of 'vote'; choose one of "
        "['Bob Stone', 'Dan Wu']",
        "Sorry: 'offer' is not a move you may make now; you may: say <words>, "
        "vote <Bob Stone|Dan Wu>, pass",
    ]


async def test_a_human_game_turn_ends_with_an_error_at_end_of_input() -> None:
    from sotopia_are.agents import HumanInputError

    agent = HumanAgent("Alice Park", typed("dance"), lambda _text: None)
    with pytest.raises(HumanInputError, match="the input ended"):
        await agent.act(turn_with(DAY))
