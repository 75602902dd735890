"""ScriptedAgent: playing scripts in order and by turn."""

from pathlib import Path

import pytest
from agents_support import make_turn

from sotopia_are.agents import (
    ScriptedAgent,
    ScriptExhaustedError,
    ScriptMismatchError,
    script_turns,
)
from sotopia_are.messages import AgentAction, ScriptBackground, ScriptInteraction, parse_script
from sotopia_are.messages.parser import infer_speakers
from sotopia_are.social import EpisodeSpec, run_episode
from sotopia_are.social.protocol import SocialAgent

SCRIPTS = sorted((Path(__file__).parents[2] / "examples" / "scripts").glob("*.txt"))


def context(names: list[str]) -> ScriptBackground:
    return ScriptBackground(
        scenario="s",
        agent_names=names,
        agent_backgrounds=[""] * len(names),
        agent_goals=[""] * len(names),
    )


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
async def test_every_example_script_replays_in_order(path: Path) -> None:
    text = path.read_text()
    names = infer_speakers(text)
    script = parse_script(text, names)
    agents = ScriptedAgent.from_script(text, names)
    assert set(agents) == set(names)
    played = []
    for number, item in enumerate(script, start=1):
        agent = agents[item.speaker]
        assert isinstance(agent, SocialAgent) and agent.call_records() == ()
        played.append(await agent.act(make_turn(item.speaker, context(names), turn_number=number)))
    assert played == [item.action for item in script]
    for name, agent in agents.items():
        assert agent.remaining == 0
        with pytest.raises(ScriptExhaustedError, match=f"{name!r} was asked to act"):
            await agent.act(make_turn(name, context(names), turn_number=len(script) + 1))


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
async def test_every_example_script_replays_by_turn(path: Path) -> None:
    text = path.read_text()
    names = infer_speakers(text)
    script = parse_script(text, names)
    agents = ScriptedAgent.from_script(ScriptInteraction(interactions=text), names, by_turn=True)
    played: list[tuple[str, AgentAction]] = []
    last = len(script_turns(script)) - 1
    for number in range(last + 1):
        for name in names:
            action = await agents[name].act(make_turn(name, context(names), turn_number=number))
            if action.action_type != "none":
                played.append((name, action))
    assert played == [(i.speaker, i.action) for i in script if i.action.action_type != "none"]
    with pytest.raises(ScriptExhaustedError, match=f"the script ends at turn {last}"):
        await agents[names[0]].act(make_turn(names[0], context(names), turn_number=last + 1))


async def test_a_turn_with_several_speakers_plays_them_together() -> None:
    text = 'Turn #1\nAl said: "Go!"\nBo [action] runs\nTurn #2\nBo said: "Done."'
    agents = ScriptedAgent.from_script(text, ["Al", "Bo"], by_turn=True)
    bg = context(["Al", "Bo"])
    assert (await agents["Al"].act(make_turn("Al", bg, turn_number=0))).argument == "Go!"
    assert (await agents["Bo"].act(make_turn("Bo", bg, turn_number=0))).argument == "runs"
    assert (await agents["Al"].act(make_turn("Al", bg, turn_number=1))).action_type == "none"
    assert (await agents["Bo"].act(make_turn("Bo", bg, turn_number=1))).argument == "Done."


def test_one_speaker_acting_twice_in_a_turn_cannot_replay_by_turn() -> None:
    text = 'Turn #1\nAl said: "Hi"\nAl said: "again"'
    with pytest.raises(ScriptMismatchError, match=r"'Al' acts twice in turn 1 \(lines 2 and 3\)"):
        ScriptedAgent.from_script(text, ["Al", "Bo"], by_turn=True)
    in_order = ScriptedAgent.from_script(text, ["Al", "Bo"])
    assert in_order["Al"].remaining == 2 and in_order["Bo"].remaining == 0


async def test_a_turn_offering_only_none_consumes_nothing() -> None:
    agent = ScriptedAgent("Al", [AgentAction(action_type="speak", argument="Hi")])
    bg = context(["Al", "Bo"])
    waiting = await agent.act(make_turn("Al", bg, available_actions=("none",)))
    assert waiting.action_type == "none" and agent.remaining == 1
    assert (await agent.act(make_turn("Al", bg))).argument == "Hi"


async def test_running_out_can_mean_doing_nothing() -> None:
    agent = ScriptedAgent("Al", [], on_exhausted="none")
    assert (await agent.act(make_turn("Al", context(["Al", "Bo"])))).action_type == "none"


async def test_an_action_that_does_not_fit_the_turn_is_an_error() -> None:
    bg = context(["Al", "Bo"])
    leaving = ScriptedAgent("Al", [AgentAction(action_type="leave", argument="")])
    with pytest.raises(ScriptMismatchError, match="is not available"):
        await leaving.act(make_turn("Al", bg, available_actions=("none", "speak")))
    whisper = AgentAction(action_type="speak", argument="psst", to=["Cy"])
    with pytest.raises(ScriptMismatchError, match="unknown recipient 'Cy'"):
        await ScriptedAgent("Al", [whisper]).act(make_turn("Al", bg))


def test_last_turn_belongs_to_the_by_turn_mode() -> None:
    with pytest.raises(ValueError, match="only to actions given by turn number"):
        ScriptedAgent("Al", [], last_turn=3)
    with pytest.raises(ValueError, match="last_turn 1 is before 'Al'"):
        ScriptedAgent("Al", {2: AgentAction(action_type="none", argument="")}, last_turn=1)


async def test_a_script_replays_by_turn_through_the_simultaneous_runner() -> None:
    path = next(p for p in SCRIPTS if p.stem == "garden_committee")
    text = path.read_text()
    names = infer_speakers(text)
    script = parse_script(text, names)
    spec = EpisodeSpec(
        scenario="The last free plot.",
        agent_names=names,
        agent_backgrounds=[""] * len(names),
        agent_goals=[""] * len(names),
        turn_policy="simultaneous",
        max_turns=len(script_turns(script)),
    )
    result = await run_episode(spec, ScriptedAgent.from_script(text, names, by_turn=True))
    assert result.status == "complete", result.reason
    done = [(name, action) for name, action in result.actions() if action.action_type != "none"]
    assert done == [(i.speaker, i.action) for i in script if i.action.action_type != "none"]
