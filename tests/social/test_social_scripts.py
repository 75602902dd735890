"""A human-written script replays through the same runner, with scripted agents."""

from pathlib import Path

import pytest

from sotopia_are.agents import ScriptedAgent
from sotopia_are.messages import ScriptParseError, parse_script
from sotopia_are.social import EpisodeSpec, run_episode, script_spec

SCRIPT = Path(__file__).parents[2] / "examples" / "scripts" / "bakery_negotiation.txt"
NAMES = ["Mara Quinn", "Teo Alvarez"]


def bakery_spec() -> EpisodeSpec:
    return EpisodeSpec(
        episode_id="bakery",
        scenario="A small neighbourhood bakery, ten minutes before closing.",
        agent_names=NAMES,
        agent_backgrounds=["Mara owns the bakery.", "Teo runs a café."],
        agent_goals=["Sell the loaves at 60% or more.", "Get a standing order at half price."],
    )


async def test_a_parsed_script_replays_action_for_action() -> None:
    text = SCRIPT.read_text()
    spec = script_spec(bakery_spec(), text)
    assert spec.turn_policy == "fixed" and spec.max_turns == 12
    agents = ScriptedAgent.from_script(text, NAMES)
    result = await run_episode(spec, agents)
    parsed = [(item.speaker, item.action) for item in parse_script(text, NAMES)]
    assert result.status == "complete" and result.actions() == parsed
    assert result.reason == "fewer than two agents remain (Teo Alvarez left)"
    # Teo acts twice in a row (turns 2 and 3): the fixed order follows the script.
    assert [e.sender for e in result.entries][1:3] == ["Teo Alvarez", "Teo Alvarez"]
    again = parse_script(result.to_script(), NAMES)
    assert [(item.speaker, item.action) for item in again] == parsed


def test_an_unreadable_script_is_a_parse_error_naming_the_line() -> None:
    with pytest.raises(ScriptParseError, match="line 2"):
        script_spec(bakery_spec(), 'Turn #1\nSomeone Else said: "hi"\n')
    with pytest.raises(ValueError, match="no actions"):
        script_spec(bakery_spec(), "")
