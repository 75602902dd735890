"""The message classes: the seed's attributes, rendered strings and validation rules."""

import json

import pytest
from pydantic import ValidationError

from sotopia_are.messages import (
    AgentAction,
    Message,
    Observation,
    ScriptBackground,
    ScriptEnvironmentResponse,
    ScriptInteraction,
    SimpleMessage,
    validate_recipients,
)


def test_message_interface_is_abstract() -> None:
    with pytest.raises(NotImplementedError):
        Message().to_natural_language()


def test_simple_message() -> None:
    assert SimpleMessage(message="Hello, world!").to_natural_language() == "Hello, world!"


def test_observation_turn_zero_shows_the_background() -> None:
    obs = Observation(last_turn="Hi there!", turn_number=0, available_actions=["speak", "none"])
    assert obs.to_natural_language() == "\nHi there!\nConversation Starts:\n"


def test_observation_later_turns_are_numbered_from_zero() -> None:
    obs = Observation(last_turn="Hi there!", turn_number=1, available_actions=["speak", "none"])
    assert obs.to_natural_language() == "Turn #0: Hi there!\n"
    assert Observation(
        last_turn="x", turn_number=5, available_actions=[]
    ).to_natural_language() == ("Turn #4: x\n")


def test_observation_rejects_unknown_action_types() -> None:
    with pytest.raises(ValidationError):
        Observation(last_turn="x", turn_number=1, available_actions=["shout"])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("action_type", "argument", "rendered"),
    [
        ("speak", "Hello, how can I help you?", 'said: "Hello, how can I help you?"'),
        ("none", "", "did nothing"),
        ("none", "ignored", "did nothing"),
        ("leave", "", "left the conversation"),
        ("action", "moved closer", "[action] moved closer"),
        ("non-verbal communication", "smiled", "[non-verbal communication] smiled"),
    ],
)
def test_agent_action_renders_like_sotopia(action_type: str, argument: str, rendered: str) -> None:
    action = AgentAction.model_validate({"action_type": action_type, "argument": argument})
    assert action.to_natural_language() == rendered


def test_private_action_renders_its_recipients() -> None:
    action = AgentAction(
        action_type="speak", argument="Psst, let's discuss this privately", to=["agent2", "agent3"]
    )
    assert action.to_natural_language() == (
        "[private to ['agent2', 'agent3']] said: \"Psst, let's discuss this privately\""
    )
    leave = AgentAction(action_type="leave", argument="", to=["agent2"])
    assert leave.to_natural_language() == "[private to ['agent2']] left the conversation"


def test_to_defaults_to_public_and_empty_means_public() -> None:
    assert AgentAction(action_type="speak", argument="hi").to is None
    assert AgentAction(action_type="speak", argument="hi", to=[]).to is None
    assert AgentAction(action_type="speak", argument="hi", to=[]).to_natural_language() == (
        'said: "hi"'
    )


def test_action_type_is_checked() -> None:
    with pytest.raises(ValidationError):
        AgentAction.model_validate({"action_type": "shout", "argument": "hi"})


CONTEXT = {"agent_names": ["Alice", "Bob", "Carol"], "sender": "Alice"}


def test_recipients_checked_with_validation_context() -> None:
    data = {"action_type": "speak", "argument": "psst", "to": ["Bob", "Carol"]}
    assert AgentAction.model_validate(data, context=CONTEXT).to == ["Bob", "Carol"]


def test_unknown_recipient_names_the_allowed_ones() -> None:
    data = {"action_type": "speak", "argument": "psst", "to": ["Dave"]}
    with pytest.raises(ValueError, match=r"'Dave'.*allowed recipients: \['Bob', 'Carol'\]"):
        AgentAction.model_validate(data, context=CONTEXT)


def test_sender_cannot_whisper_to_themselves() -> None:
    data = {"action_type": "speak", "argument": "psst", "to": ["Alice"]}
    with pytest.raises(ValueError, match=r"themselves; allowed recipients: \['Bob', 'Carol'\]"):
        AgentAction.model_validate(data, context=CONTEXT)


def test_without_context_recipients_are_not_checked() -> None:
    assert AgentAction(action_type="speak", argument="psst", to=["Anyone"]).to == ["Anyone"]


def test_validate_recipients_helper() -> None:
    assert validate_recipients(["Bob"], ["Alice", "Bob"], "Alice") == ["Bob"]
    with pytest.raises(ValueError, match="allowed recipients"):
        validate_recipients(["Zed"], ["Alice", "Bob"], "Alice")
    with pytest.raises(ValueError, match="themselves"):
        validate_recipients(["Alice"], ["Alice", "Bob"], "Alice")


SEED_BACKGROUND = (
    "Here is the context of this interaction:\n"
    "Scenario: Business Meeting\n"
    "Participants: Alice and Bob\n"
    "Alice's background: Engineer\n"
    "Bob's background: Manager\n"
    "Alice's goal: Discuss project\n"
    "Bob's goal: Approve budget"
)


def seed_background() -> ScriptBackground:
    return ScriptBackground(
        scenario="Business Meeting",
        p1_name="Alice",
        p2_name="Bob",
        p1_background="Engineer",
        p2_background="Manager",
        p1_goal="Discuss project",
        p2_goal="Approve budget",
    )


def test_two_participant_background_renders_like_sotopia() -> None:
    background = seed_background()
    assert background.to_natural_language() == SEED_BACKGROUND
    assert (background.p1_name, background.p2_name) == ("Alice", "Bob")
    assert (background.p1_background, background.p2_background) == ("Engineer", "Manager")
    assert (background.p1_goal, background.p2_goal) == ("Discuss project", "Approve budget")
    assert background.agent_names == ["Alice", "Bob"]


def test_background_from_a_sotopia_dict() -> None:
    data = {
        "scenario": "Business Meeting",
        "p1_name": "Alice",
        "p2_name": "Bob",
        "p1_background": "Engineer",
        "p2_background": "Manager",
        "p1_goal": "Discuss project",
        "p2_goal": "Approve budget",
    }
    assert ScriptBackground.model_validate(data) == seed_background()


def test_background_lists_and_two_participant_fields_agree() -> None:
    lists = ScriptBackground(
        scenario="Business Meeting",
        agent_names=["Alice", "Bob"],
        agent_backgrounds=["Engineer", "Manager"],
        agent_goals=["Discuss project", "Approve budget"],
    )
    assert lists == seed_background()
    assert lists.to_natural_language() == SEED_BACKGROUND


def test_background_for_three_participants() -> None:
    background = ScriptBackground(
        scenario="A vote",
        agent_names=["Ann", "Bo", "Cy"],
        agent_backgrounds=["a", "b", "c"],
        agent_goals=["ga", "gb", "gc"],
    )
    assert background.to_natural_language() == (
        "Here is the context of this interaction:\n"
        "Scenario: A vote\n"
        "Participants: Ann, Bo and Cy\n"
        "Ann's background: a\nBo's background: b\nCy's background: c\n"
        "Ann's goal: ga\nBo's goal: gb\nCy's goal: gc"
    )
    assert background.p2_name == "Bo"


def test_background_rejects_mismatched_or_mixed_input() -> None:
    with pytest.raises(ValidationError, match="as many"):
        ScriptBackground(
            scenario="s", agent_names=["A", "B"], agent_backgrounds=["a"], agent_goals=["x", "y"]
        )
    with pytest.raises(ValidationError, match="missing two-participant fields"):
        ScriptBackground.model_validate({"scenario": "s", "p1_name": "A"})
    with pytest.raises(ValidationError, match="not both"):
        ScriptBackground.model_validate(
            {"scenario": "s", "p1_name": "A", "agent_names": ["A", "B"]}
        )
    with pytest.raises(ValidationError, match="distinct"):
        ScriptBackground(
            scenario="s", agent_names=["A", "A"], agent_backgrounds=["", ""], agent_goals=["", ""]
        )


def test_environment_response_two_participants() -> None:
    response = ScriptEnvironmentResponse(
        terminated=True, p1_rate=9.5, p2_rate=7.0, comments="A lively discussion."
    )
    # Sotopia glues the score to the label ("participant 19.5"); we keep them apart.
    assert response.to_natural_language() == (
        "Environment response:\n"
        "The conversation is terminated.\n"
        "Rating of participant 1: 9.5\n"
        "Rating of participant 2: 7.0\n"
        "A lively discussion.\n"
    )
    assert (response.p1_rate, response.p2_rate) == (9.5, 7.0)
    assert response.rates == {"participant 1": 9.5, "participant 2": 7.0}


def test_environment_response_drops_empty_lines() -> None:
    response = ScriptEnvironmentResponse(
        terminated=False, p1_rate=None, p2_rate=None, comments=None
    )
    assert response.to_natural_language() == "Environment response:\n"
    partial = ScriptEnvironmentResponse(p2_rate=(8.0, {"goal": 8.0}), comments="x\n\n  y")
    assert partial.to_natural_language() == (
        "Environment response:\nRating of participant 2: (8.0, {'goal': 8.0})\nx\n  y\n"
    )
    assert partial.p1_rate is None


def test_environment_response_for_any_number_of_participants() -> None:
    response = ScriptEnvironmentResponse(
        terminated=True, rates={"Ann": 3.0, "Bo": 4.5, "Cy": None}, comments="ok"
    )
    assert response.to_natural_language() == (
        "Environment response:\nThe conversation is terminated.\n"
        "Rating of Ann: 3.0\nRating of Bo: 4.5\nok\n"
    )
    assert (response.p1_rate, response.p2_rate) == (3.0, 4.5)


def test_environment_response_from_a_sotopia_dict_and_back() -> None:
    data = {"terminated": True, "p1_rate": 1.0, "p2_rate": 2.0, "comments": "c"}
    response = ScriptEnvironmentResponse.model_validate(data)
    assert response.p2_rate == 2.0
    assert ScriptEnvironmentResponse.model_validate(response.model_dump()) == response
    with pytest.raises(ValidationError, match="not both"):
        ScriptEnvironmentResponse.model_validate({"p1_rate": 1.0, "rates": {"A": 1.0}})


def test_seed_usage_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    print(SimpleMessage(message="Hello, world!").to_natural_language())
    print(
        Observation(
            last_turn="Hi there!", turn_number=1, available_actions=["speak", "none"]
        ).to_natural_language()
    )
    print(seed_background().to_natural_language())
    response = ScriptEnvironmentResponse(
        terminated=True, p1_rate=9.5, p2_rate=7.0, comments="A lively discussion."
    )
    print(response.to_natural_language())
    print(
        AgentAction(
            action_type="speak", argument="Hello, how can I help you?"
        ).to_natural_language()
    )
    private_action = AgentAction(
        action_type="speak", argument="Psst, let's discuss this privately", to=["agent2", "agent3"]
    )
    print(private_action.to_natural_language())
    interaction_script = """
Turn #1
Alice said: "Hello, Bob!"

Turn #2
Bob said: "Hi, Alice! How's the project going?"
"""
    script_interaction = ScriptInteraction(interactions=interaction_script)
    print(script_interaction.to_natural_language())
    out = capsys.readouterr().out
    assert 'said: "Hello, how can I help you?"\n' in out
    assert "[private to ['agent2', 'agent3']] said: \"Psst, let's discuss this privately\"\n" in out
    assert out.endswith(interaction_script + "\n")


@pytest.mark.parametrize(
    ("context", "fragment"),
    [
        ({"agent_names": ["Alice", "Bob"]}, "gives 'agent_names' but not 'sender'"),
        ({"sender": "Alice"}, "gives 'sender' but not 'agent_names'"),
    ],
)
def test_a_partial_validation_context_is_an_error(
    context: dict[str, object], fragment: str
) -> None:
    data = {"action_type": "speak", "argument": "psst", "to": ["Zed"]}
    with pytest.raises(ValidationError, match=fragment):
        AgentAction.model_validate(data, context=context)
    # Contexts that say nothing about recipients are someone else's business.
    assert AgentAction.model_validate(data, context={"other": 1}).to == ["Zed"]


def test_a_sender_who_is_not_a_participant_is_named_as_such() -> None:
    data = {"action_type": "speak", "argument": "psst", "to": ["Bob"]}
    with pytest.raises(ValidationError, match=r"sender 'Eve' .* not a participant") as caught:
        AgentAction.model_validate(data, context={"agent_names": ["Alice", "Bob"], "sender": "Eve"})
    assert "themselves" not in str(caught.value)
    with pytest.raises(ValueError, match="not a participant; participants: \\['Alice', 'Bob'\\]"):
        validate_recipients(["Alice"], ["Alice", "Bob"], "Eve")


def test_duplicate_recipients_are_rejected() -> None:
    with pytest.raises(ValidationError, match="'Bob' is listed twice"):
        AgentAction(action_type="speak", argument="x", to=["Bob", "Bob"])
    with pytest.raises(ValidationError, match="'Bob' is listed twice"):
        AgentAction.model_validate(
            {"action_type": "speak", "argument": "x", "to": ["Bob", "Carol", "Bob"]},
            context=CONTEXT,
        )
    with pytest.raises(ValueError, match="'Bob' is listed twice"):
        validate_recipients(["Bob", "Bob"], ["Alice", "Bob"], "Alice")


def test_two_participant_dumps_carry_sotopias_keys_and_round_trip() -> None:
    background = seed_background()
    dumped = background.model_dump()
    assert {key: dumped[key] for key in ("p1_name", "p2_name", "p1_goal", "p2_background")} == {
        "p1_name": "Alice",
        "p2_name": "Bob",
        "p1_goal": "Discuss project",
        "p2_background": "Manager",
    }
    assert json.loads(background.model_dump_json())["p2_goal"] == "Approve budget"
    assert ScriptBackground.model_validate(dumped) == background
    assert ScriptBackground.model_validate_json(background.model_dump_json()) == background
    with pytest.raises(ValidationError, match="not both"):
        ScriptBackground.model_validate(dumped | {"p2_goal": "something else"})

    response = ScriptEnvironmentResponse(
        terminated=True, rates={"Alice": (8.0, {"goal": 8.0}), "Bob": None}, comments="c"
    )
    dumped = response.model_dump()
    assert (dumped["p1_rate"], dumped["p2_rate"]) == ((8.0, {"goal": 8.0}), None)
    as_json = json.loads(response.model_dump_json())
    assert (as_json["p1_rate"], as_json["p2_rate"]) == ([8.0, {"goal": 8.0}], None)
    assert ScriptEnvironmentResponse.model_validate(dumped) == response
    assert ScriptEnvironmentResponse.model_validate_json(response.model_dump_json()) == response
    with pytest.raises(ValidationError, match="not both"):
        ScriptEnvironmentResponse.model_validate(dumped | {"p1_rate": 1.0})
    seed = ScriptEnvironmentResponse(p1_rate=9.5, p2_rate=7.0)
    assert ScriptEnvironmentResponse.model_validate_json(seed.model_dump_json()) == seed


def test_n_participant_dumps_have_no_sotopia_keys_and_round_trip() -> None:
    background = ScriptBackground(
        scenario="A vote",
        agent_names=["Ann", "Bo", "Cy"],
        agent_backgrounds=["a", "b", "c"],
        agent_goals=["ga", "gb", "gc"],
    )
    assert not any(key.startswith(("p1_", "p2_")) for key in background.model_dump())
    assert ScriptBackground.model_validate(background.model_dump()) == background
    assert ScriptBackground.model_validate_json(background.model_dump_json()) == background
    response = ScriptEnvironmentResponse(rates={"Ann": 1.0, "Bo": (2.0, {"g": 2.0}), "Cy": None})
    assert "p1_rate" not in response.model_dump()
    assert ScriptEnvironmentResponse.model_validate(response.model_dump()) == response
    assert ScriptEnvironmentResponse.model_validate_json(response.model_dump_json()) == response


def test_background_lines_only_when_some_background_is_known() -> None:
    def render(backgrounds: list[str], goals: list[str]) -> str:
        return ScriptBackground(
            scenario="S", agent_names=["A", "B"], agent_backgrounds=backgrounds, agent_goals=goals
        ).to_natural_language()

    head = "Here is the context of this interaction:\nScenario: S\nParticipants: A and B\n"
    assert render(["", ""], ["ga", "gb"]) == head + "A's goal: ga\nB's goal: gb"
    assert render(["", "b"], ["ga", "gb"]) == (
        head + "A's background: Unknown\nB's background: b\nA's goal: ga\nB's goal: gb"
    )
    assert render(["a", ""], ["ga", ""]) == (
        head + "A's background: a\nB's background: Unknown\nA's goal: ga\nB's goal:"
    )
