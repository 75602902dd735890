"""HumanAgent with injected input and output."""

from collections.abc import Callable, Iterable

import pytest
from agents_support import make_turn

from sotopia_are.agents import HumanAgent, HumanInputError, parse_command
from sotopia_are.messages import AgentAction, ScriptBackground
from sotopia_are.social.protocol import SocialAgent

NAMES = ["Alice Park", "Bob", "Carol Diaz"]
CONTEXT = ScriptBackground(
    scenario="A yard sale.",
    agent_names=NAMES,
    agent_backgrounds=["", "", ""],
    agent_goals=["Sell the bike.", "Unknown", "Unknown"],
)


def lines(*typed: str) -> Callable[[str], str]:
    """An ``input`` that types ``typed`` one line per call, then hits EOF."""
    pending = iter(typed)

    def read(prompt: str) -> str:
        try:
            return next(pending)
        except StopIteration:
            raise EOFError from None

    return read


def agent_with(typed: Iterable[str]) -> tuple[HumanAgent, list[str]]:
    shown: list[str] = []
    return HumanAgent("Alice Park", lines(*typed), shown.append), shown


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("say hello there", AgentAction(action_type="speak", argument="hello there")),
        ("  SPEAK  hi ", AgentAction(action_type="speak", argument="hi")),
        ("action waves", AgentAction(action_type="action", argument="waves")),
        ("gesture nods", AgentAction(action_type="non-verbal communication", argument="nods")),
        ("none", AgentAction(action_type="none", argument="")),
        ("leave now", AgentAction(action_type="leave", argument="")),
        ("@Bob say psst", AgentAction(action_type="speak", argument="psst", to=["Bob"])),
        (
            "@Carol Diaz, Bob action winks",
            AgentAction(action_type="action", argument="winks", to=["Carol Diaz", "Bob"]),
        ),
    ],
)
def test_commands(line: str, expected: AgentAction) -> None:
    assert parse_command(line, "Alice Park", NAMES) == expected


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("", "no command"),
        ("sing la la", "unknown command 'sing'"),
        ("say", "'say' needs some text"),
        ("@Zed say hi", "unknown recipient 'Zed'"),
        ("@Carol say hi", "unknown recipient 'Carol'"),
        ("@Alice Park say hi", "cannot send a private message to themselves"),
        ("@Bob leave", "'leave' cannot be private"),
    ],
)
def test_bad_commands_say_what_is_wrong(line: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_command(line, "Alice Park", NAMES)


async def test_bad_input_is_explained_and_asked_again() -> None:
    agent, shown = agent_with(["dance", "@Zed say hi", "leave", "@Bob say meet me later"])
    assert isinstance(agent, SocialAgent) and agent.call_records() == ()
    turn = make_turn("Alice Park", CONTEXT, available_actions=("none", "speak"))
    action = await agent.act(turn)
    assert action == AgentAction(action_type="speak", argument="meet me later", to=["Bob"])
    view, *errors = shown
    assert "Alice Park's goal: Sell the bike." in view
    assert "You may: none, say <words>." in view
    assert '"@Bob,Carol Diaz say psst"' in view
    assert errors == [
        "Sorry: unknown command 'dance'; start with one of: "
        "say, speak, action, gesture, nonverbal, none, leave",
        "Sorry: unknown recipient 'Zed' of a private message from 'Alice Park'; "
        "allowed recipients: ['Bob', 'Carol Diaz']",
        "Sorry: 'leave' is not available now; you may: none, say <words>",
    ]


async def test_the_context_is_shown_once_then_only_what_is_new() -> None:
    agent, shown = agent_with(["say hi", "none"])
    first = make_turn("Alice Park", CONTEXT, transcript='Turn #0: Bob said: "Yo"')
    await agent.act(first)
    later = make_turn(
        "Alice Park",
        CONTEXT,
        turn_number=3,
        transcript="(long)",
        last_turn='Bob said: "Bye"',
    )
    await agent.act(later)
    assert 'Turn #0: Bob said: "Yo"' in shown[0] and "Scenario: A yard sale." in shown[0]
    assert shown[1].startswith('Bob said: "Bye"') and "Scenario" not in shown[1]
    assert "== Alice Park, turn 3 ==" in shown[1]


async def test_end_of_input_is_a_clear_error() -> None:
    agent, _ = agent_with(["hmm"])
    with pytest.raises(HumanInputError, match="the input ended \\(EOF\\)"):
        await agent.act(make_turn("Alice Park", CONTEXT))
