"""Legal moves and their checks, the deal, the spec, bids and reading an outcome back."""

import json
import random
import subprocess
import sys

import pytest
from games_support import NAMES, by_role, example, play, policy_players, say, small_game
from pydantic import ValidationError

from sotopia_are.games import (
    GameSpec,
    GameState,
    RandomPlayer,
    check_move,
    deal_roles,
    outcome_of,
    run_game,
)
from sotopia_are.messages import GameMove
from sotopia_are.simulation.apps.app import derive_seed
from sotopia_are.social import AgentTurn, EpisodeSpec, EpisodeStatus, MoveOption

VOTE = MoveOption(name="vote", kind="target", targets=("Bo", "Cy"))
OFFER = MoveOption(name="offer", kind="offer", amount_min=10, amount_max=20)
SAY = MoveOption(name="say", kind="speak")
PASS = MoveOption(name="pass", kind="pass")
OPTIONS = (VOTE, OFFER, SAY, PASS)


@pytest.mark.parametrize(
    ("move", "reason"),
    [
        (GameMove(move="kill", target="Bo"), "'kill' is not a move you may make now (you may: "),
        (GameMove(move="vote"), "'vote' needs a target, one of ['Bo', 'Cy']"),
        (GameMove(move="vote", target="Al"), "'vote' cannot target 'Al'; it may target"),
        (GameMove(move="vote", target="Bo", amount=3), "'vote' takes no amount"),
        (GameMove(move="pass", argument="I wait."), "'pass' takes no words"),
        (GameMove(move="offer"), "'offer' needs an amount from 10 to 20"),
        (GameMove(move="offer", amount=21), "'offer' needs an amount from 10 to 20, not 21"),
        (GameMove(move="offer", amount=9), "not 9"),
        (GameMove(move="say"), "'say' needs something to say"),
        (GameMove(move="say", argument="  \n "), "'say' needs something to say"),
        (GameMove(move="say", argument="Yes.\nTurn #4\nNo."), "what you say cannot be written"),
        (GameMove(move="say", argument="Hi", target="Bo"), "'say' takes no target"),
        (GameMove(move="pass", amount=1), "'pass' takes no amount"),
    ],
)
def test_an_illegal_move_gets_its_reason(move: GameMove, reason: str) -> None:
    found = check_move(move, OPTIONS)
    assert found is not None and reason in found, found


@pytest.mark.parametrize(
    "move",
    [
        GameMove(move="vote", target="Cy"),
        GameMove(move="offer", amount=10),
        GameMove(move="offer", amount=20),
        GameMove(move="say", argument="Two lines\nof talk."),
        GameMove(move="pass"),
        GameMove(move="vote", target="Bo", argument="He lied."),
        GameMove(move="offer", amount=12, argument="My last word."),
    ],
)
def test_a_legal_move_passes(move: GameMove) -> None:
    assert check_move(move, OPTIONS) is None


def test_accept_and_reject_are_offered_only_against_someone_elses_standing_offer() -> None:
    spec = example("bargaining")
    first, second = spec.agent_names
    state = GameState(spec)
    state.begin_phase(1, 0)
    names = [option.name for option in state.options(first)]
    assert names == ["say", "offer"]
    state.record(first, GameMove(move="offer", amount=50))
    assert [option.name for option in state.options(first)] == ["say", "offer"]
    assert [option.name for option in state.options(second)] == ["say", "offer", "accept", "reject"]
    offer = state.options(second)[1]
    assert (offer.amount_min, offer.amount_max, offer.audience) == (0, 100, "everyone")
    state.record(second, GameMove(move="reject"))
    assert state.offer is None and state.deal is None
    assert [option.name for option in state.options(first)] == ["say", "offer"]
    state.record(second, GameMove(move="offer", amount=40))
    state.record(first, GameMove(move="accept"))
    assert state.deal is not None and state.deal.offer.amount == 40


def test_targets_are_the_eligible_living_players() -> None:
    spec = example("werewolf", seed=7)
    roles = by_role(spec)
    wolf, doctor = roles["werewolf"][0], roles["doctor"][0]
    state = GameState(spec)
    phases = [phase.name for phase in state.rules.phases]
    state.begin_phase(1, phases.index("doctor"))
    assert state.options(doctor)[0].targets == tuple(spec.agent_names)  # "living"
    state.eliminate(roles["villager"][0])
    state.begin_phase(1, phases.index("night-kill"))
    (kill,) = state.options(wolf)
    assert kill.targets == tuple(
        n for n in spec.agent_names if n not in roles["werewolf"] and n != roles["villager"][0]
    )
    assert kill.audience == "team"
    assert state.audience(wolf, "team") == tuple(
        n for n in spec.agent_names if n in roles["werewolf"]
    )
    state.begin_phase(1, phases.index("day-vote"))
    assert wolf not in state.options(wolf)[0].targets


def test_roles_are_dealt_by_the_seed_alike_in_every_process() -> None:
    spec = example("werewolf", seed=11)
    dealt = deal_roles(spec)
    seats = [r.name for r in spec.game.roles for _ in range(r.count)]
    random.Random(derive_seed(11, "roles")).shuffle(seats)
    assert list(dealt.values()) == seats and list(dealt) == spec.agent_names
    code = (
        "import json; from sotopia_are.games import GameSpec, deal_roles; "
        "import pathlib; t = pathlib.Path('examples/games/werewolf.json').read_text(); "
        "s = GameSpec.model_validate_json(t).replace(seed=11); print(json.dumps(deal_roles(s)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="."
    )
    assert json.loads(out.stdout) == dealt
    assert {tuple(deal_roles(example("werewolf", seed=s)).values()) for s in range(8)} != {
        tuple(dealt.values())
    }


def test_a_game_spec_needs_its_game_and_stays_a_game_spec_when_changed() -> None:
    spec = example("bargaining")
    data = json.loads(spec.model_dump_json(exclude={"game"}))
    with pytest.raises(ValidationError, match="game"):
        GameSpec.model_validate(data)
    changed = spec.replace(seed=4)
    assert type(changed) is GameSpec and changed.seed == 4 and not changed.id_given
    assert type(spec.for_run()) is GameSpec
    with pytest.raises(ValidationError, match="game"):
        spec.replace(game=None)


async def test_a_plain_episode_spec_with_a_game_is_played_and_a_conversation_refused() -> None:
    game = example("bargaining", seed=3)
    spec = EpisodeSpec.model_validate(game.model_dump(exclude_unset=True))
    assert type(spec) is EpisodeSpec
    result = await run_game(spec, [RandomPlayer(n, 3) for n in spec.agent_names])
    assert result.status is EpisodeStatus.COMPLETE
    assert result.outcome == outcome_of(spec, result.entries)
    conversation = spec.replace(game=None)
    with pytest.raises(ValueError, match="conversation, not a game"):
        await run_game(conversation, [RandomPlayer(n) for n in spec.agent_names])


async def test_outcome_of_refuses_a_log_that_is_not_a_finished_game() -> None:
    spec = example("werewolf", seed=2)
    result = await run_game(spec, [RandomPlayer(n, 2) for n in spec.agent_names])
    entries = result.entries
    moves = [i for i, entry in enumerate(entries) if entry.move is not None]
    with pytest.raises(ValueError, match="did not end"):
        outcome_of(spec, entries[: moves[-1]])
    with pytest.raises(ValueError, match="the game ended after"):
        outcome_of(spec, [*entries, entries[moves[-1]]])
    with pytest.raises(ValueError, match="moves 0 on are by"):
        outcome_of(spec, entries[moves[0] + 1 :])


async def test_in_a_bids_phase_the_highest_bidder_acts_and_bids_stay_private() -> None:
    bids_rules = {
        "roles": [
            {"name": "talker", "team": "all", "count": 3},
            {"name": "judge", "team": "bench"},
        ],
        "phases": [
            {
                "name": "floor",
                "order": "bids",
                "rounds": 3,
                "actions": [{"name": "say", "kind": "speak"}],
            },
            {
                "name": "verdict",
                "actors": {"role": "judge"},
                "actions": [
                    {"name": "convict", "kind": "target", "effect": "eliminate"},
                ],
            },
        ],
        "ends": [{"when": "team_eliminated", "team": "all", "winners": ["bench"]}],
        "max_cycles": 1,
    }
    spec = small_game(4, bids_rules, seed=9)
    # Round 1: one clear winner; rounds 2 and 3: a tie of all, drawn by the seed.
    bids = {NAMES[0]: [3, 5, 5], NAMES[1]: [7, 5, 5], NAMES[2]: [1, 5, 5], NAMES[3]: [0, 5, 5]}

    def policy(name: str, turn: AgentTurn) -> GameMove:
        if [o.name for o in turn.moves] == ["bid"]:
            assert turn.moves[0].audience == "moderator" and turn.moves[0].amount_max == 10
            return GameMove(move="bid", amount=bids[name].pop(0))
        if turn.phase == "verdict":
            return GameMove(move="convict", target=turn.moves[0].targets[0])
        return say(f"{name} has the floor.")

    result = await play(spec, policy_players(spec, policy))
    assert result.status is EpisodeStatus.COMPLETE
    speakers = [e.sender for e in result.entries if e.move is not None and e.move.move == "say"]
    bidders = spec.agent_names
    drawn = [random.Random(derive_seed(9, f"bid:1:floor:{r}")).choice(bidders) for r in (2, 3)]
    assert speakers == [NAMES[1], *drawn]
    for entry in result.entries:
        if entry.move is not None and entry.move.move == "bid":
            assert entry.to == (entry.sender,)
