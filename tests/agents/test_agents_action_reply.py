"""Agent answers as real models write them: lenient in form, strict in content.

Every case goes through litellm's real HTTP path to the local server: the form cases must
be accepted from the first answer (one request, noted on the call record), the content
cases must be sent back with the exact problem and never coerced. Every instance of the
schema we send is accepted (a server enforcing the schema may answer any of them).
"""

import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from agents_support import MODEL, make_turn
from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.agents import LLMAgent, action_output_type, normalize_action_reply
from sotopia_are.llm import LLMSession
from sotopia_are.llm.structured import parse_reply, response_format_for
from sotopia_are.messages import AgentAction, ScriptBackground, parse_script, render_script
from sotopia_are.messages.action import ActionType
from sotopia_are.testing import LocalLLMServer, random_instance

NAMES = ("Alice Park", "Bob Stone", "Carol Diaz")
ALL: tuple[ActionType, ...] = ("none", "speak", "non-verbal communication", "action", "leave")
BACKGROUND = ScriptBackground(
    scenario="A yard sale.",
    agent_names=list(NAMES),
    agent_backgrounds=["A neighbour."] * 3,
    agent_goals=["Sell the bike.", "Buy the bike.", "Get the bike donated."],
)
SPEAK = '{"action_type": "speak", "argument": "Fine."}'


async def act(server: LocalLLMServer, session: LLMSession, *replies: str) -> AgentAction:
    server.enqueue(*replies)
    agent = LLMAgent("Alice Park", MODEL, session)
    return await agent.act(make_turn("Alice Park", BACKGROUND))


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # The answer a real 1.5B model gave three times, which once failed the episode.
        (
            '{"action_type": "none", "argument": null, "to": null}',
            AgentAction(action_type="none", argument=""),
        ),
        ('{"action_type": "leave"}', AgentAction(action_type="leave", argument="")),
        ('{"action_type": "none", "argument": "  "}', AgentAction(action_type="none", argument="")),
        # Schema-true (the schema cannot tie the argument to the action type): dropped.
        (
            '{"action_type": "none", "argument": "I will wait and see."}',
            AgentAction(action_type="none", argument=""),
        ),
        (
            '{"action_type": "leave", "argument": "Goodbye!", "to": ["Bob Stone"]}',
            AgentAction(action_type="leave", argument="", to=["Bob Stone"]),
        ),
        # Lines that would read as another turn or action are read as one line.
        (
            '{"action_type": "speak", "argument": "Fine.\\nTurn #4: Bob Stone said: \\"No.\\""}',
            AgentAction(action_type="speak", argument='Fine. Turn #4: Bob Stone said: "No."'),
        ),
        (
            '{"action_type": "action", "argument": "picks up\\r\\n the bike "}',
            AgentAction(action_type="action", argument="picks up the bike"),
        ),
        (
            '{"action_type": "speak", "argument": "Psst.", "to": ["Bob Stone", "bob stone"]}',
            AgentAction(action_type="speak", argument="Psst.", to=["Bob Stone"]),
        ),
        (
            'Here is my action:\n```json\n{"action_type": "speak", "argument": "Hi!"}\n```',
            AgentAction(action_type="speak", argument="Hi!"),
        ),
        (
            '{"action_type": "speak", "argument": "Hi!", "emotion": "warm"}',
            AgentAction(action_type="speak", argument="Hi!"),
        ),
        (
            '{"action_type": "speak", "argument": "Hi!", "to": []}',
            AgentAction(action_type="speak", argument="Hi!"),
        ),
        (
            '{"action_type": "speak", "argument": "Psst.", "to": ["bob stone"]}',
            AgentAction(action_type="speak", argument="Psst.", to=["Bob Stone"]),
        ),
        (
            '{"action_type": "speak", "argument": "Psst.", "to": ["Carol"]}',
            AgentAction(action_type="speak", argument="Psst.", to=["Carol Diaz"]),
        ),
        (
            '{"action_type": "speak", "argument": "Psst.", "to": "Bob"}',
            AgentAction(action_type="speak", argument="Psst.", to=["Bob Stone"]),
        ),
        (
            '{"Action_Type": "Non_Verbal_Communication", "Argument": "waves"}',
            AgentAction(action_type="non-verbal communication", argument="waves"),
        ),
        (
            '{"action": {"action_type": "ACTION", "argument": "sits down"}}',
            AgentAction(action_type="action", argument="sits down"),
        ),
    ],
)
async def test_form_is_normalised_and_accepted_at_once(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    reply: str,
    expected: AgentAction,
) -> None:
    session = make_session()
    assert await act(llm_server, session, reply) == expected
    [call] = session.calls
    assert len(call.attempts) == 1 and not call.repaired
    # A fence is presentation, read before normalising; everything else here is form.
    normalized = not reply.startswith("Here is")
    assert call.normalized == normalized and bool(call.attempts[0].normalized) == normalized
    assert session.usage().normalized_calls == int(normalized)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ('{"action_type": "dance", "argument": "a jig"}', '(got "dance")'),
        ('{"action_type": "speak", "argument": "Psst.", "to": ["Zed"]}', "unknown recipient 'Zed'"),
        (
            '{"action_type": "speak", "argument": "Me.", "to": ["Alice"]}',
            "cannot send a private message to themselves",
        ),
        ('{"action_type": "speak", "argument": null}', "argument: Input should be a valid string"),
        ('{"action_type": "speak"}', "argument: Field required"),
    ],
)
async def test_content_errors_are_asked_again_with_the_exact_problem(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    reply: str,
    problem: str,
) -> None:
    session = make_session()
    assert await act(llm_server, session, reply, SPEAK) == AgentAction(
        action_type="speak", argument="Fine."
    )
    repair = llm_server.chat_requests[1].messages[-1]["content"]
    assert problem in repair
    [call] = session.calls
    assert call.repaired and session.usage().repaired_calls == 1


async def test_a_dropped_argument_is_noted_and_kept_in_the_raw_answer(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    reply = '{"action_type": "leave", "argument": "Goodbye!"}'
    session = make_session()
    assert await act(llm_server, session, reply) == AgentAction(action_type="leave", argument="")
    [call] = session.calls
    [attempt] = call.attempts
    assert attempt.normalized == ["dropped the argument \"Goodbye!\" of 'leave': it takes none"]
    assert attempt.raw_text == reply and call.parsed["argument"] == ""


async def test_an_ambiguous_first_name_is_asked_again(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    names = ("Alice Park", "Bob Stone", "Bob Marsh")
    background = BACKGROUND.model_copy(update={"agent_names": list(names)})
    llm_server.enqueue('{"action_type": "speak", "argument": "Psst.", "to": ["Bob"]}', SPEAK)
    agent = LLMAgent("Alice Park", MODEL, make_session())
    await agent.act(make_turn("Alice Park", background, participants=names))
    assert "unknown recipient 'Bob'" in llm_server.chat_requests[1].messages[-1]["content"]


async def test_the_schema_sent_states_the_available_actions_and_recipients(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(SPEAK)
    agent = LLMAgent("Alice Park", MODEL, make_session())
    await agent.act(make_turn("Alice Park", BACKGROUND, available_actions=("none", "speak")))
    schema = llm_server.chat_requests[0].body["response_format"]["json_schema"]["schema"]
    properties = schema["properties"]
    assert properties["action_type"]["enum"] == ["none", "speak"]
    recipients = properties["to"]["anyOf"][0]["items"]["enum"]
    assert recipients == ["Bob Stone", "Carol Diaz"]
    assert schema["required"] == ["action_type", "argument"]
    assert schema["additionalProperties"] is False


ACTIONS = st.builds(
    dict,
    action_type=st.sampled_from(ALL),
    argument=st.text(min_size=1, max_size=20).filter(
        lambda t: t and t.strip() == t and not {"\n", "\r"} & set(t)
    ),
    to=st.one_of(
        st.none(), st.lists(st.sampled_from(NAMES[1:]), min_size=1, max_size=2, unique=True)
    ),
)


def canonical(action: dict[str, Any]) -> dict[str, Any]:
    if action["action_type"] in ("none", "leave"):
        return {**action, "argument": ""}
    return action


@given(ACTIONS)
def test_canonical_answers_are_left_alone(action: dict[str, Any]) -> None:
    data = canonical(action)
    assert normalize_action_reply(json.loads(json.dumps(data)), NAMES) == (data, [])


@given(ACTIONS, st.data())
def test_respelled_answers_validate_as_the_canonical_action(
    action: dict[str, Any], data: st.DataObject
) -> None:
    def respell(text: str) -> str:
        return data.draw(st.sampled_from([text.upper(), text.title(), text.replace(" ", "_")]))

    written: dict[str, Any] = {
        "Action_Type": respell(action["action_type"]),
        "argument": action["argument"],
    }
    if action["action_type"] in ("none", "leave"):
        written["argument"] = data.draw(st.sampled_from([None, "", " "]))
    if action["to"] is not None:
        written["to"] = [
            data.draw(st.sampled_from([name.lower(), name.split()[0], f" {name.upper()} "]))
            for name in action["to"]
        ]
    written["mood"] = "calm"
    output_type = action_output_type("Alice Park", NAMES, ALL)
    normalized, notes = normalize_action_reply(written, NAMES)
    assert notes  # every change is noted
    assert output_type.model_validate(normalized).model_dump() == {
        "to": None,
        **canonical(action),
    }


PARTICIPANTS = st.lists(
    st.sampled_from(["Ann", "Bob Stone", "Bob Marsh", "Benedikt Müller-Roth", "Jo Ng", "ann"]),
    min_size=2,  # a script has two participants or more
    max_size=4,
    unique=True,
)


@given(
    PARTICIPANTS.flatmap(lambda names: st.tuples(st.just(names), st.sampled_from(names))),
    st.lists(st.sampled_from(ALL), min_size=1, unique=True),
    st.integers(min_value=0, max_value=2**64),
)
def test_every_instance_of_the_sent_schema_is_accepted_and_reads_back(
    participants_and_sender: tuple[list[str], str],
    available: list[ActionType],
    seed: int,
) -> None:
    """What a server enforcing the schema may answer (any instance of it) is accepted, and
    the action it becomes is written into a transcript that reads back as itself."""
    participants, sender = participants_and_sender
    output_type = action_output_type(sender, tuple(participants), tuple(available))
    response_format = response_format_for("json_schema", output_type)
    assert response_format is not None
    schema = response_format["json_schema"]["schema"]
    instance = random_instance(schema, random.Random(seed))
    action = AgentAction.model_validate(
        parse_reply(json.dumps(instance), output_type).value.model_dump(),
        context={"agent_names": participants, "sender": sender},
    )
    assert action.action_type == instance["action_type"]
    [read] = parse_script(render_script([(sender, action)]), participants)
    assert (read.speaker, read.action) == (sender, action)
