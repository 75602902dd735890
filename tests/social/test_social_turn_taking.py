"""Turn-taking policies and termination rules."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from social_support import LEAVE, NAMES, NOTHING, PlaybackAgent, make_spec, say

from sotopia_are.social import (
    EpisodeSpec,
    EpisodeState,
    MaxTurnsAndStaleRule,
    TerminationRule,
    run_episode,
)

MIRA, TOMAS, PRIYA = NAMES


def speakers(count: int, turns: int) -> list[PlaybackAgent]:
    return [PlaybackAgent(n, [say(f"{n} #{i}") for i in range(turns)]) for n in NAMES[:count]]


async def test_round_robin_goes_in_order_and_skips_those_who_left() -> None:
    agents = speakers(3, 5)
    agents[1].actions.insert(1, LEAVE)  # Tomas leaves in his second turn (turn 4)
    result = await run_episode(make_spec(3, max_turns=8), agents)
    order = [(e.turn, e.sender) for e in result.entries]
    assert order == [
        (0, MIRA),
        (1, TOMAS),
        (2, PRIYA),
        (3, MIRA),
        (4, TOMAS),
        (5, PRIYA),
        (6, MIRA),
        (7, PRIYA),
    ]


async def test_the_episode_ends_when_fewer_than_two_remain() -> None:
    agents = [PlaybackAgent(MIRA, [say("bye"), LEAVE]), PlaybackAgent(TOMAS, [LEAVE])]
    result = await run_episode(make_spec(), [*agents])
    assert result.turns_played == 2
    assert result.reason == f"fewer than two agents remain ({TOMAS} left)"


async def test_simultaneous_turns_hide_same_turn_actions_until_everyone_chose() -> None:
    agents = speakers(3, 3)
    result = await run_episode(make_spec(3, turn_policy="simultaneous", max_turns=2), agents)
    assert [(e.turn, e.sender) for e in result.entries] == [
        (0, MIRA),
        (0, TOMAS),
        (0, PRIYA),
        (1, MIRA),
        (1, TOMAS),
        (1, PRIYA),
    ]
    for agent in agents:
        first, second = agent.turns
        assert first.transcript == ""
        assert " #1" not in second.transcript and second.transcript.count(' #0"') == 3
    assert len({e.event_time for e in result.events[:3]}) == 1


def random_order(seed: int) -> list[str]:
    import asyncio

    result = asyncio.run(
        run_episode(make_spec(3, turn_policy="random", seed=seed, max_turns=12), speakers(3, 12))
    )
    return [e.sender for e in result.entries]


def test_random_order_is_seeded_and_the_same_in_another_process() -> None:
    order = random_order(11)
    assert order == random_order(11) and order != random_order(12)
    assert set(order) == set(NAMES)
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]);"
        "from test_social_turn_taking import random_order;"
        "print(json.dumps(random_order(11)))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == order


async def test_a_fixed_order_plays_the_given_actors() -> None:
    order = [MIRA, MIRA, TOMAS, MIRA]
    result = await run_episode(
        make_spec(turn_policy="fixed", turn_order=order, max_turns=4), speakers(2, 3)
    )
    assert [e.sender for e in result.entries] == order


def test_spec_checks_the_turn_order() -> None:
    with pytest.raises(ValueError, match="exactly when turn_policy is 'fixed'"):
        make_spec(turn_order=[MIRA])
    with pytest.raises(ValueError, match="not one of"):
        make_spec(turn_policy="fixed", turn_order=["Zed"], max_turns=1)
    with pytest.raises(ValueError, match="max_turns is 20"):
        make_spec(turn_policy="fixed", turn_order=[MIRA])


async def test_defaults_are_sotopias_twenty_turns() -> None:
    spec = make_spec()
    assert (spec.max_turns, spec.max_stale_turns, spec.turn_policy) == (20, 2, "round-robin")
    result = await run_episode(spec, speakers(2, 10))
    assert result.turns_played == 20 and result.reason == "reached the maximum of 20 turns"


@pytest.mark.parametrize(("stale", "turns"), [(2, 4), (0, 2), (4, 6)])
async def test_the_episode_ends_after_more_than_k_idle_turns(stale: int, turns: int) -> None:
    # One spoken action, then nothing: it ends once more than K turns in a row were idle.
    agents = [PlaybackAgent(MIRA, [say("anyone?")]), PlaybackAgent(TOMAS)]
    result = await run_episode(make_spec(max_stale_turns=stale), agents)
    assert result.turns_played == turns
    assert result.reason == f"nobody did anything for {stale + 1} consecutive turns"


async def test_one_idle_agent_in_a_simultaneous_turn_is_not_stale() -> None:
    agents = [PlaybackAgent(MIRA, [say(str(i)) for i in range(10)]), PlaybackAgent(TOMAS)]
    result = await run_episode(make_spec(turn_policy="simultaneous", max_turns=8), agents)
    assert result.turns_played == 8 and TOMAS not in {
        s for s, a in result.actions() if a != NOTHING
    }


class StopWhenSomeoneSaysDeal:
    def check(self, state: EpisodeState) -> str | None:
        if any(a.argument == "deal" for _, a in state.last_turn):
            return "a deal was struck"
        return None


async def test_custom_termination_rules_plug_in() -> None:
    rule = StopWhenSomeoneSaysDeal()
    assert isinstance(rule, TerminationRule)
    agents = [PlaybackAgent(MIRA, [say("offer"), say("deal")]), PlaybackAgent(TOMAS, [say("no")])]
    result = await run_episode(
        make_spec(), agents, termination_rules=[rule, MaxTurnsAndStaleRule(max_turn_number=20)]
    )
    assert result.reason == "a deal was struck" and result.turns_played == 3


def test_the_state_carries_every_action_so_far() -> None:
    seen: list[int] = []

    class Spy:
        def check(self, state: EpisodeState) -> str | None:
            seen.append(len(state.actions))
            assert len(state.actions) == state.turn_number
            return "enough" if state.turn_number == 3 else None

    import asyncio

    asyncio.run(run_episode(make_spec(), speakers(2, 3), termination_rules=[Spy()]))
    assert seen == [0, 1, 2, 3]


def test_spec_round_trips_as_json() -> None:
    spec = make_spec(
        3, turn_policy="random", env_events=[{"turn": 1, "content": "x", "to": [MIRA]}]
    )
    assert EpisodeSpec.model_validate_json(spec.model_dump_json()) == spec
