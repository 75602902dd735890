"""RuleBasedTerminatedEvaluator: inside the runner, on finished episodes and scripts, and
through Sotopia's call shape."""

from pathlib import Path

import pytest

from sotopia_are.agents import ScriptedAgent
from sotopia_are.evaluation import RuleBasedTerminatedEvaluator, TerminationCheck
from sotopia_are.messages import AgentAction, Observation, parse_script
from sotopia_are.social import EpisodeSpec, TerminationRule, run_episode

BAKERY = Path(__file__).parents[2] / "examples" / "scripts" / "bakery_negotiation.txt"
NAMES = ["Mara Quinn", "Teo Alvarez"]
NOTHING = AgentAction(action_type="none", argument="")
LEAVE = AgentAction(action_type="leave", argument="")


def say(text: str) -> AgentAction:
    return AgentAction(action_type="speak", argument=text)


def spec(**changes: object) -> EpisodeSpec:
    return EpisodeSpec.model_validate(
        {
            "scenario": "A bakery at closing time.",
            "agent_names": NAMES,
            "agent_backgrounds": ["baker", "café owner"],
            "agent_goals": ["sell high", "buy low"],
            **changes,
        }
    )


def test_defaults_are_sotopias_and_it_is_a_termination_rule() -> None:
    rule = RuleBasedTerminatedEvaluator()
    assert (rule.max_turn_number, rule.max_stale_turn) == (20, 2)
    assert isinstance(rule, TerminationRule)
    with pytest.raises(ValueError, match="max_turn_number"):
        RuleBasedTerminatedEvaluator(max_turn_number=0)
    with pytest.raises(ValueError, match="max_stale_turn"):
        RuleBasedTerminatedEvaluator(max_stale_turn=-1)


def test_an_episode_ends_after_max_turn_number_turns() -> None:
    rule = RuleBasedTerminatedEvaluator(max_turn_number=3)
    actions = [("A", say("hi")), ("B", say("hello"))]
    assert rule.check_actions(actions, ["A", "B"]) == TerminationCheck(reason=None)
    check = rule.check_actions([*actions, ("A", say("so"))], ["A", "B"])
    assert check.terminated
    assert check.reason == "reached the maximum of 3 turns"


def test_an_episode_ends_when_fewer_than_two_agents_remain() -> None:
    rule = RuleBasedTerminatedEvaluator()
    three = ["A", "B", "C"]
    one_left = [("A", say("hi")), ("B", LEAVE)]
    assert not rule.check_actions(one_left, three).terminated
    check = rule.check_actions([*one_left, ("C", LEAVE)], three)
    assert check.reason == "fewer than two agents remain (B, C left)"


def test_an_episode_ends_after_more_than_max_stale_turn_idle_turns() -> None:
    rule = RuleBasedTerminatedEvaluator(max_stale_turn=2)
    actions = [("A", say("hi")), ("B", NOTHING), ("A", NOTHING)]
    assert not rule.check_actions(actions, ["A", "B"]).terminated
    assert not rule.check_actions(
        [*actions, ("B", say("well")), ("A", NOTHING)], ["A", "B"]
    ).terminated
    check = rule.check_actions([*actions, ("B", NOTHING)], ["A", "B"])
    assert check.reason == "nobody did anything for 3 consecutive turns"
    # A simultaneous turn is stale only if every actor in it did nothing.
    busy = [[("A", NOTHING), ("B", say("x"))]] * 3
    assert not rule.check_turns(busy, ["A", "B"]).terminated
    assert rule.check_turns([[("A", NOTHING), ("B", NOTHING)]] * 3, ["A", "B"]).terminated


def test_sotopias_call_shape_skips_environment_messages() -> None:
    rule = RuleBasedTerminatedEvaluator(max_stale_turn=1)
    observation = Observation(last_turn="", turn_number=1, available_actions=["none"])
    messages = [
        ("Environment", observation),
        ("A", NOTHING),
        ("Environment", observation),
        ("B", NOTHING),
    ]
    [(who, ((key, terminated), reason))] = rule(2, messages)
    assert (who, key, terminated) == ("environment", "terminated", True)
    assert reason == "nobody did anything for 2 consecutive turns"
    assert rule(0, []) == [("environment", (("terminated", False), ""))]
    assert rule(20, [])[0][1] == (("terminated", True), "reached the maximum of 20 turns")


async def test_the_async_call_gives_the_same_answer() -> None:
    rule = RuleBasedTerminatedEvaluator()
    messages = [("A", say("hi")), ("B", say("hi"))]
    assert await rule.__acall__(20, messages) == rule(20, messages)


async def test_inside_a_running_episode_it_decides_when_the_episode_ends() -> None:
    lines = [say(f"line {n}") for n in range(10)]
    agents = [ScriptedAgent(NAMES[0], lines), ScriptedAgent(NAMES[1], lines)]
    rule = RuleBasedTerminatedEvaluator(max_turn_number=5)
    episode = await run_episode(spec(max_turns=20), agents, termination_rules=[rule])
    assert episode.status == "complete"
    assert episode.turns_played == 5
    assert episode.reason == "reached the maximum of 5 turns"
    # Applied again to the finished episode, it agrees.
    assert rule.check_episode(episode) == TerminationCheck(reason=episode.reason)
    assert not RuleBasedTerminatedEvaluator(max_turn_number=6).check_episode(episode).terminated


def test_standalone_on_a_parsed_script() -> None:
    parsed = parse_script(BAKERY.read_text(encoding="utf-8"), NAMES)
    actions = [(item.speaker, item.action) for item in parsed]
    rule = RuleBasedTerminatedEvaluator()
    # Teo leaves in the last turn: one participant remains.
    assert rule.check_actions(actions, NAMES).reason == (
        "fewer than two agents remain (Teo Alvarez left)"
    )
    assert not any(rule.check_actions(actions[:n], NAMES).terminated for n in range(len(actions)))
