"""RuleBasedTerminatedEvaluator: too long, too few agents, stale; Sotopia's call shape."""

from pathlib import Path

import pytest

from sotopia_are.evaluation import RuleBasedTerminatedEvaluator
from sotopia_are.messages import AgentAction, Observation, parse_script

BAKERY = Path(__file__).parents[2] / "examples" / "scripts" / "bakery_negotiation.txt"
NAMES = ["Mara Quinn", "Teo Alvarez"]


def say(text: str) -> AgentAction:
    return AgentAction(action_type="speak", argument=text)


NOTHING = AgentAction(action_type="none", argument="")
LEAVE = AgentAction(action_type="leave", argument="")


def test_defaults_are_sotopias() -> None:
    rule = RuleBasedTerminatedEvaluator()
    assert (rule.max_turn_number, rule.max_stale_turn) == (20, 2)
    with pytest.raises(ValueError, match="max_turn_number"):
        RuleBasedTerminatedEvaluator(max_turn_number=0)
    with pytest.raises(ValueError, match="max_stale_turn"):
        RuleBasedTerminatedEvaluator(max_stale_turn=-1)


def test_an_episode_ends_after_max_turn_number_turns() -> None:
    rule = RuleBasedTerminatedEvaluator(max_turn_number=3)
    actions = [("A", say("hi")), ("B", say("hello"))]
    assert not rule.check(2, actions, NAMES).terminated
    check = rule.check(3, [*actions, ("A", say("so"))], ["A", "B"])
    assert check.terminated
    assert check.reasons == ("the conversation is too long (3 turns; the limit is 3)",)


def test_an_episode_ends_when_fewer_than_two_agents_remain() -> None:
    rule = RuleBasedTerminatedEvaluator()
    three = ["A", "B", "C"]
    one_left = [("A", say("hi")), ("B", LEAVE)]
    assert not rule.check(2, one_left, three).terminated
    check = rule.check(3, [*one_left, ("C", LEAVE)], three)
    assert check.terminated
    assert check.comment == "too few active agents (1 of 3 have not left the conversation)"
    # Without the participant list, the speakers seen so far are the participants.
    assert rule.check(1, [("A", LEAVE)], None).terminated
    assert not rule.check(0, [], None).terminated


def test_an_episode_ends_when_more_than_max_stale_turn_actions_do_nothing() -> None:
    rule = RuleBasedTerminatedEvaluator(max_stale_turn=2)
    actions = [("A", say("hi")), ("B", NOTHING), ("A", NOTHING)]
    assert not rule.check(3, actions, ["A", "B"]).terminated
    assert not rule.check(4, [*actions, ("B", say("well")), ("A", NOTHING)], ["A", "B"]).terminated
    check = rule.check(4, [*actions, ("B", NOTHING)], ["A", "B"])
    assert check.reasons == (
        "the conversation is stale (3 actions in a row did nothing; at most 2 are allowed)",
    )


def test_every_rule_that_applies_is_given() -> None:
    rule = RuleBasedTerminatedEvaluator(max_turn_number=2, max_stale_turn=0)
    check = rule.check(2, [("A", LEAVE), ("B", NOTHING)], ["A", "B"])
    assert len(check.reasons) == 3


def test_sotopias_call_shape_skips_environment_messages() -> None:
    rule = RuleBasedTerminatedEvaluator(max_stale_turn=1)
    observation = Observation(last_turn="", turn_number=1, available_actions=["none"])
    messages = [
        ("Environment", observation),
        ("A", NOTHING),
        ("Environment", observation),
        ("B", NOTHING),
    ]
    [(who, ((key, terminated), reasons))] = rule(2, messages)
    assert (who, key, terminated) == ("environment", "terminated", True)
    assert "stale" in reasons
    assert rule(1, messages[:2]) == [("environment", (("terminated", False), ""))]


async def test_the_async_call_gives_the_same_answer() -> None:
    rule = RuleBasedTerminatedEvaluator()
    assert await rule.__acall__(20, [("A", say("hi"))]) == rule(20, [("A", say("hi"))])


def test_standalone_on_a_parsed_script() -> None:
    parsed = parse_script(BAKERY.read_text(encoding="utf-8"), NAMES)
    actions = [(item.speaker, item.action) for item in parsed]
    rule = RuleBasedTerminatedEvaluator()
    # Teo leaves in the last turn: one participant remains.
    final = rule.check(len(actions), actions, NAMES)
    assert final.terminated
    assert final.reasons == ("too few active agents (1 of 2 have not left the conversation)",)
    assert not any(rule.check(n, actions[:n], NAMES).terminated for n in range(len(actions)))
