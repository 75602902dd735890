"""Laws over random games of the example files, played by random legal players: the
visibility law, the bound, replay to an identical log, and outcomes read back from the log."""

import time
from collections.abc import Sequence

from games_support import eliminated_at, example
from hypothesis import given, settings
from hypothesis import strategies as st

from sotopia_are.games import (
    MAX_ASKS,
    GameResult,
    GameSpec,
    RandomPlayer,
    ScriptedPlayer,
    deal_roles,
    outcome_of,
    run_game,
)
from sotopia_are.messages import GameMove
from sotopia_are.record import load_record, record_of_result
from sotopia_are.social import EpisodeStatus, EpisodeViews

FILES = ("werewolf", "werewolf_witch", "bargaining")


async def random_game(name: str, seed: int) -> tuple[GameSpec, GameResult, list[RandomPlayer]]:
    spec = example(name, seed=seed)
    players = [RandomPlayer(n, seed) for n in spec.agent_names]
    return spec, await run_game(spec, players), players


def check_visibility(result: GameResult, players: Sequence[RandomPlayer]) -> None:
    """No entry whose audience leaves a player out is in anything that player was shown."""
    entries = result.entries
    for player in players:
        name = player.name
        seen = {entry.render() for entry in entries if entry.visible_to(name)}
        hidden = [entry.render() for entry in entries if not entry.visible_to(name)]
        hidden = [line for line in hidden if line not in seen]
        shown = [turn.transcript + "\n" + turn.observation.last_turn for turn in player.turns]
        shown.append(result.transcript(name))
        for text in shown:
            for line in hidden:
                assert line not in text, (name, line)


# Each private ability's moves, and who alone may ever see them (besides the engine).
ABILITIES = {"kill": "werewolf", "inspect": "seer", "protect": "doctor"}
ABILITIES |= {"heal": "witch", "poison": "witch", "pass": "witch"}


def check_secrets(spec: GameSpec, result: GameResult, players: Sequence[RandomPlayer]) -> None:
    """What the rules keep secret never reaches a player it is kept from, judged from the
    roles alone (not from the audiences the engine gave the log's entries)."""
    roles = deal_roles(spec)
    wolves = {name for name, role in roles.items() if role == "werewolf"}
    whispers = {
        f"{p.name} thinks aloud in turn {turn.turn_number} ({index})"
        for p in players
        for index, turn in enumerate(p.turns, start=1)
        if turn.phase == "night-chat"
    }
    reveals = [e.content for e in result.entries if e.action is None and " is a " in e.content]
    for player in players:
        name, role = player.name, roles[player.name]
        secrets = [f"{other}, your role is" for other in spec.agent_names if other != name]
        secrets += [f"[action] {move}" for move, holder in ABILITIES.items() if holder != role]
        if name not in wolves:
            secrets += [*whispers, "kill in night-kill:"]
        if role != "seer":
            secrets += reveals
        for turn in player.turns:
            text = turn.transcript + "\n" + turn.observation.last_turn
            for secret in secrets:
                assert secret not in text, (name, role, secret)


def check_valid(spec: GameSpec, result: GameResult) -> None:
    """A complete game within its bound, with an outcome consistent with its rules and log."""
    assert result.status is EpisodeStatus.COMPLETE, result.reason
    outcome = result.outcome
    rules = spec.game
    assert outcome is not None and outcome.reason == result.reason
    assert 1 <= outcome.cycles <= rules.max_cycles
    # Each round asks each actor at most MAX_ASKS times (twice as many asks with bids).
    asks_per_cycle = sum(phase.rounds * 2 * spec.game.seats for phase in rules.phases)
    assert result.turns_played <= asks_per_cycle * MAX_ASKS * rules.max_cycles
    assert set(outcome.winners) <= set(rules.teams)
    dead = eliminated_at(result)
    for row in outcome.players:
        assert row.alive == (row.name not in dead)
        assert row.won == (row.team in outcome.winners)
    if outcome.ended_by == "cycle_limit":
        assert outcome.cycles == rules.max_cycles and outcome.winners == ()
    if outcome.ended_by == "deal":
        assert outcome.deal is not None
        for row in outcome.players:
            payoff = rules.role(row.role).payoff
            assert row.payoff == payoff.base + payoff.per_unit * outcome.deal
    assert outcome_of(spec, result.entries) == outcome


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(FILES), seed=st.integers(0, 2**32))
async def test_no_private_move_or_notice_reaches_a_player_outside_its_audience(
    name: str, seed: int
) -> None:
    spec, result, players = await random_game(name, seed)
    assert result.status is EpisodeStatus.COMPLETE
    check_visibility(result, players)
    check_secrets(spec, result, players)
    assert any(e.to is not None for e in result.entries)  # there was something to hide


async def test_a_recorded_game_replays_to_an_identical_log() -> None:
    for name, seed in [("werewolf", 21), ("werewolf_witch", 22), ("bargaining", 23)]:
        spec, first, _ = await random_game(name, seed)
        moves: dict[str, list[GameMove]] = {n: [] for n in spec.agent_names}
        for entry in first.entries:
            if entry.move is not None:
                moves[entry.sender].append(entry.move)
        again = await run_game(spec, [ScriptedPlayer(n, moves[n]) for n in spec.agent_names])
        assert again.canonical_log() == first.canonical_log()
        assert record_of_result(again).to_json() == record_of_result(first).to_json()


async def test_an_outcome_read_back_from_a_stored_record_is_the_runners() -> None:
    spec, result, _ = await random_game("werewolf_witch", 5)
    assert result.spec == spec
    record = load_record(record_of_result(result).to_json())
    entries = EpisodeViews.of_exported(record.spec, record.events).entries
    assert outcome_of(record.spec, entries) == result.outcome
    assert outcome_of(record.spec, record.entries) == result.outcome


async def test_two_hundred_random_games_finish_with_valid_outcomes() -> None:
    started = time.perf_counter()
    endings: set[str] = set()
    for seed in range(200):
        name = FILES[seed % len(FILES)]
        spec, result, players = await random_game(name, seed)
        check_valid(spec, result)
        assert result.outcome is not None
        endings.add(result.outcome.ended_by)
        dead = eliminated_at(result)
        for player in players:
            if player.name in dead:
                assert all(turn.turn_number < dead[player.name] for turn in player.turns)
    assert endings == {"team_eliminated", "team_parity", "deal", "cycle_limit"}
    # Measured, not asserted tightly: about a second on one core (see docs/games.md).
    assert time.perf_counter() - started < 60
