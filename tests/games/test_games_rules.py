"""Each rule of the engine with scripted players and a known outcome."""

import random
from typing import Any

from games_support import (
    NAMES,
    by_role,
    eliminated_at,
    example,
    notices,
    play,
    policy_players,
    say,
    small_game,
    targets,
)

from sotopia_are.games import MAX_ASKS, ScriptedPlayer, outcome_of
from sotopia_are.messages import AgentAction, GameMove
from sotopia_are.simulation.apps.app import derive_seed
from sotopia_are.social import AgentTurn, EpisodeStatus

A, B, C, D = NAMES[:4]


def vote_game(tie: str, max_cycles: int = 1) -> dict[str, Any]:
    """One wolf and three villagers who only vote, simultaneously."""
    return {
        "roles": [
            {"name": "wolf", "team": "wolves", "payoff": {"no_deal": 2}},
            {"name": "villager", "team": "village", "count": 3, "payoff": {"no_deal": 1}},
        ],
        "phases": [
            {
                "name": "vote",
                "order": "simultaneous",
                "actions": [
                    {
                        "name": "vote",
                        "kind": "target",
                        "effect": "eliminate",
                        "resolution": "plurality",
                        "tie": tie,
                    }
                ],
            }
        ],
        "ends": [
            {"when": "team_eliminated", "team": "wolves", "winners": ["village"]},
            {"when": "team_parity", "team": "wolves", "winners": ["wolves"]},
        ],
        "max_cycles": max_cycles,
    }


# Everyone votes for their partner: A and B for each other, C and D for each other.
PAIRS = {A: B, B: A, C: D, D: C}


def pair_votes(name: str, turn: AgentTurn) -> GameMove:
    return GameMove(move="vote", target=PAIRS[name])


async def test_a_tie_with_no_one_eliminates_nobody_and_the_cycle_limit_ends_the_game() -> None:
    spec = small_game(4, vote_game("no_one", max_cycles=2), seed=5)
    result = await play(spec, policy_players(spec, pair_votes))
    assert result.status is EpisodeStatus.COMPLETE
    assert result.reason == "cycle limit 2 reached"
    outcome = result.outcome
    assert outcome is not None and outcome.ended_by == "cycle_limit" and outcome.cycles == 2
    assert outcome.winners == () and all(row.alive and not row.won for row in outcome.players)
    assert {row.role: row.payoff for row in outcome.players} == {"wolf": 2, "villager": 1}
    tie = f"vote in vote: {A} 1, {B} 1, {C} 1, {D} 1; a tie between {A}, {B}, {C}, {D}: "
    assert notices(result).count((tie + "nobody is chosen.", None)) == 2
    assert eliminated_at(result) == {}


async def test_a_tie_with_random_eliminates_the_one_the_seed_draws() -> None:
    for seed in range(6):
        spec = small_game(4, vote_game("random"), seed=seed)
        result = await play(spec, policy_players(spec, pair_votes))
        drawn = random.Random(derive_seed(seed, "tie:1:vote:vote")).choice([A, B, C, D])
        assert list(eliminated_at(result)) == [drawn]
        assert (f"{drawn} was eliminated in vote.", None) in notices(result)
        assert result.outcome == outcome_of(spec, result.entries)


async def test_a_refused_simultaneous_vote_is_asked_again_before_any_vote_is_seen() -> None:
    spec = small_game(4, vote_game("no_one"), seed=5)
    votes = {A: [B], B: [B, A], C: [D], D: [C]}  # B first votes for itself
    players = policy_players(
        spec, lambda name, turn: GameMove(move="vote", target=votes[name].pop(0))
    )
    result = await play(spec, players)
    assert result.status is EpisodeStatus.COMPLETE
    assert [t.turn_number for t in players[1].turns] == [0, 1]
    assert [len(p.turns) for p in players] == [1, 2, 1, 1]
    # The second ask showed B the refusal, and none of the others' votes.
    again = players[1].turns[1]
    assert "your move was refused: 'vote' cannot target" in again.transcript
    assert "[action] vote" not in again.transcript
    logged = [(e.sender, e.move.target, e.turn) for e in result.entries if e.move is not None]
    assert logged == [(A, B, 1), (B, A, 1), (C, D, 1), (D, C, 1)]


def werewolf_policy(spec: Any, **choices: Any) -> Any:
    """Werewolf players: the doctor protects ``protect``, the seer inspects a wolf, the
    wolves kill ``kill`` (each a function of the offered targets), and by day everyone
    votes for ``vote``'s choice, by default the first living wolf they may vote for."""
    wolves = by_role(spec)["werewolf"]

    def policy(name: str, turn: AgentTurn) -> GameMove:
        if turn.phase in ("night-chat", "day-discussion"):
            return say(f"{name} speaks in turn {turn.turn_number}.")
        if turn.phase == "doctor":
            return GameMove(move="protect", target=choices["protect"](targets(turn, "protect")))
        if turn.phase == "seer":
            return GameMove(move="inspect", target=targets(turn, "inspect")[0])
        if turn.phase == "night-kill":
            return GameMove(move="kill", target=choices["kill"](targets(turn, "kill")))
        votable = targets(turn, "vote")
        return GameMove(move="vote", target=choices.get("vote", first_of(wolves))(votable))

    return policy


def first_of(wanted: list[str], *then: str) -> Any:
    """A choice of the first offered name in ``wanted``, else the first of ``then``
    offered, else the first offered."""

    def choose(offered: tuple[str, ...]) -> str:
        found = [name for name in offered if name in wanted]
        found += [name for name in then if name in offered]
        return (found or list(offered))[0]

    return choose


async def test_a_protected_target_survives_the_kill() -> None:
    spec = example("werewolf", seed=3)
    roles = by_role(spec)
    wolves = roles["werewolf"]
    victim, scapegoat = roles["villager"][0], roles["villager"][2]
    # Day 1 votes out a villager, so both wolves hunt on night 1; then a wolf goes each day.
    # The doctor protects the wolves' victim every night: two kills fail.
    policy = werewolf_policy(
        spec,
        protect=lambda _: victim,
        kill=lambda _: victim,
        vote=first_of([scapegoat], *wolves),
    )
    result = await play(spec, policy_players(spec, policy))
    outcome = result.outcome
    assert outcome is not None and outcome.winners == ("village",)
    assert result.reason == "game over: village won" and outcome.cycles == 3
    assert outcome.player(victim).alive
    assert set(eliminated_at(result)) == {scapegoat, *wolves}
    assert notices(result).count(("Nobody was eliminated in night-kill.", None)) == 2
    # Night 1: both wolves chose the victim, told to both; night 2: the one left.
    both = tuple(n for n in spec.agent_names if n in wolves)
    assert (f"kill in night-kill: {victim} 2; {victim} is chosen.", both) in notices(result)
    last = (f"kill in night-kill: {victim} 1; {victim} is chosen.", (wolves[1],))
    assert last in notices(result)


async def test_a_nights_protection_ends_with_its_cycle_not_covering_the_next_days_vote() -> None:
    spec = example("werewolf", seed=3)
    roles = by_role(spec)
    wolves, doctor = roles["werewolf"], roles["doctor"][0]
    protected, scapegoat = roles["villager"][0], roles["villager"][2]
    # Day 1 votes out a villager; night 1 the doctor saves the wolves' victim; day 2 the
    # village votes that very player out: the night's protection is over.
    policy = werewolf_policy(
        spec,
        protect=first_of([protected], doctor),
        kill=first_of([protected]),
        vote=first_of([scapegoat], protected, *wolves),
    )
    result = await play(spec, policy_players(spec, policy))
    texts = [text for text, _ in notices(result)]
    assert texts.count("Nobody was eliminated in night-kill.") == 1
    assert f"{protected} was eliminated in day-vote." in texts
    assert texts.index("Nobody was eliminated in night-kill.") < texts.index(
        f"{protected} was eliminated in day-vote."
    )
    # Night 2 kills the first villager left, reaching parity: 2 wolves and 2 others.
    second = roles["villager"][1]
    assert f"{second} was eliminated in night-kill." in texts
    assert set(eliminated_at(result)) == {scapegoat, protected, second}
    outcome = result.outcome
    assert outcome is not None and outcome.ended_by == "team_parity" and outcome.cycles == 2


async def test_a_dead_seers_phase_is_skipped_and_the_dead_are_never_asked_again() -> None:
    spec = example("werewolf", seed=4)
    roles = by_role(spec)
    seer = roles["seer"][0]
    doctor = roles["doctor"][0]
    policy = werewolf_policy(
        spec,
        protect=lambda _: doctor,
        kill=lambda living: seer if seer in living else living[-1],
    )
    players = policy_players(spec, policy)
    result = await play(spec, players)
    assert result.status is EpisodeStatus.COMPLETE and result.reason == "game over: village won"
    texts = [text for text, _ in notices(result)]
    assert any(text.startswith("Cycle 1, seer") for text in texts)
    assert not any(text.startswith("Cycle 2, seer") for text in texts)
    assert any(text.startswith("Cycle 2, day-vote") for text in texts)
    dead = eliminated_at(result)
    assert seer in dead
    for player in players:
        if player.name in dead:
            assert all(turn.turn_number < dead[player.name] for turn in player.turns)
    seer_phases = [turn for p in players for turn in p.turns if turn.phase == "seer"]
    assert len(seer_phases) == 1


async def test_team_parity_ends_the_game_for_the_werewolves() -> None:
    spec = example("werewolf", seed=1)
    roles = by_role(spec)
    villagers, doctor, seer = roles["villager"], roles["doctor"][0], roles["seer"][0]
    # Everyone votes out a villager (the last villager votes for the seer), and the wolves
    # kill one: day 1 and night 1 take two villagers, day 2 the third: 2 wolves and 2
    # others left, parity right after the second day's vote, before its night.
    policy = werewolf_policy(
        spec,
        protect=lambda _: doctor,
        kill=first_of(villagers),
        vote=first_of(villagers, seer),
    )
    result = await play(spec, policy_players(spec, policy))
    outcome = result.outcome
    assert outcome is not None and outcome.ended_by == "team_parity"
    assert result.reason == "game over: werewolves won" and outcome.cycles == 2
    assert set(eliminated_at(result)) == set(villagers)
    texts = [text for text, _ in notices(result)]
    assert [text for text in texts if "was eliminated" in text] == [
        f"{villagers[0]} was eliminated in day-vote.",
        f"{villagers[1]} was eliminated in night-kill.",
        f"{villagers[2]} was eliminated in day-vote.",
    ]
    assert not any(text.startswith("Cycle 2, night-chat") for text in texts)
    for row in outcome.players:
        assert row.won == (row.team == "werewolves")
        assert row.payoff == (1.0 if row.won else 0.0)


def witch_policy(spec: Any, witch_moves: list[GameMove]) -> Any:
    """Werewolf-with-witch players: the witch plays ``witch_moves`` in its phase; the
    wolves kill the first villager; by day everyone votes out the third villager while
    it lives (so both wolves live through night 1), then a wolf."""
    roles = by_role(spec)
    wolves, villagers = roles["werewolf"], roles["villager"]
    vote = first_of([villagers[2]], *wolves)

    def policy(name: str, turn: AgentTurn) -> GameMove:
        if turn.phase in ("night-chat", "day-discussion"):
            return say()
        if turn.phase == "seer":
            return GameMove(move="inspect", target=targets(turn, "inspect")[0])
        if turn.phase == "witch":
            return witch_moves.pop(0)
        if turn.phase == "night-kill":
            return GameMove(move="kill", target=first_of(villagers)(targets(turn, "kill")))
        return GameMove(move="vote", target=vote(targets(turn, "vote")))

    return policy


async def test_the_witchs_potions_are_one_time() -> None:
    spec = example("werewolf_witch", seed=2)
    roles = by_role(spec)
    witch, victim = roles["witch"][0], roles["villager"][0]
    # Night 1: heal the wolves' victim. Night 2: heal again (refused), then pass.
    moves = [
        GameMove(move="heal", target=victim),
        GameMove(move="heal", target=victim),
        GameMove(move="pass"),
    ]
    players = policy_players(spec, witch_policy(spec, moves))
    result = await play(spec, players)
    assert result.status is EpisodeStatus.COMPLETE and moves == []
    witch_turns = [t for p in players if p.name == witch for t in p.turns if t.phase == "witch"]
    offered = [tuple(option.name for option in turn.moves) for turn in witch_turns]
    assert offered == [("heal", "poison", "pass"), ("poison", "pass"), ("poison", "pass")]
    refusal = [(text, to) for text, to in notices(result) if "refused" in text]
    assert refusal == [
        (
            f"{witch}, your move was refused: 'heal' is not a move you may make now "
            "(you may: 'poison', 'pass'). Choose again.",
            (witch,),
        )
    ]
    # The refusal reached the witch's next turn, and the potion saved the victim once:
    # night 1's kill failed, night 2's (after the witch's second turn) killed it.
    assert refusal[0][0] in witch_turns[2].transcript
    assert witch_turns[2].turn_number == witch_turns[1].turn_number + 1
    texts = [text for text, _ in notices(result)]
    assert texts.count("Nobody was eliminated in night-kill.") == 1
    dead = eliminated_at(result)
    assert victim in dead and dead[victim] > witch_turns[1].turn_number
    assert set(dead) == {victim, roles["villager"][2], *roles["werewolf"]}
    assert result.outcome is not None and result.outcome.winners == ("village",)
    assert result.outcome.cycles == 3
    logged = [e.move for e in result.entries if e.move is not None and e.sender == witch]
    assert [m.move for m in logged if m.move in ("heal", "poison", "pass")] == ["heal", "pass"]


async def test_a_poison_is_used_once_and_eliminates() -> None:
    spec = example("werewolf_witch", seed=2)
    roles = by_role(spec)
    villagers = roles["villager"]
    # A poor witch: she poisons a villager on night 1, then passes; the wolves (one of
    # them voted out on day 2) kill a villager each night; the village wins on day 3.
    poisoned = villagers[-1]
    moves = [GameMove(move="poison", target=poisoned)] + [GameMove(move="pass")] * 8
    players = policy_players(spec, witch_policy(spec, moves))
    result = await play(spec, players)
    witch_turns = [t for p in players for t in p.turns if t.phase == "witch"]
    assert [[o.name for o in turn.moves] for turn in witch_turns] == [
        ["heal", "poison", "pass"],
        ["heal", "pass"],
    ]
    texts = [text for text, _ in notices(result)]
    assert [text for text in texts if "was eliminated" in text] == [
        f"{villagers[2]} was eliminated in day-vote.",
        f"{poisoned} was eliminated in witch.",
        f"{villagers[0]} was eliminated in night-kill.",
        f"{roles['werewolf'][0]} was eliminated in day-vote.",
        f"{villagers[1]} was eliminated in night-kill.",
        f"{roles['werewolf'][1]} was eliminated in day-vote.",
    ]
    assert result.outcome is not None and result.outcome.winners == ("village",)
    assert result.outcome.cycles == 3


def bargaining_policy(spec: Any, price: int, answer: str = "accept") -> Any:
    seller = by_role(spec)["seller"][0]

    def policy(name: str, turn: AgentTurn) -> GameMove:
        if name == seller:
            return GameMove(move="offer", amount=price)
        if answer in [option.name for option in turn.moves]:
            return GameMove(move=answer)
        return say("Let me think.")

    return policy


async def test_an_accepted_offer_ends_the_game_with_the_payoffs() -> None:
    spec = example("bargaining", seed=0)
    roles = by_role(spec)
    seller, buyer = roles["seller"][0], roles["buyer"][0]
    result = await play(spec, policy_players(spec, bargaining_policy(spec, 55)))
    outcome = result.outcome
    assert outcome is not None and outcome.ended_by == "deal" and outcome.deal == 55
    assert result.reason == "game over: deal at 55, buyer and seller won"
    assert outcome.player(seller).payoff == 15 and outcome.player(buyer).payoff == 25
    assert outcome.player(seller).won and outcome.player(buyer).won
    moves = [(e.sender, e.move.move) for e in result.entries if e.move is not None]
    assert moves[-1] == (buyer, "accept") and (seller, "offer") in moves


async def test_a_rejected_offer_no_longer_stands_and_no_deal_pays_no_deal() -> None:
    spec = example("bargaining", seed=0)
    roles = by_role(spec)
    buyer = roles["buyer"][0]
    players = policy_players(spec, bargaining_policy(spec, 95, answer="reject"))
    result = await play(spec, players)
    outcome = result.outcome
    assert outcome is not None and outcome.ended_by == "cycle_limit" and outcome.deal is None
    assert result.reason == "cycle limit 1 reached"
    assert [row.payoff for row in outcome.players] == [0.0, 0.0]
    buyer_turns = next(p for p in players if p.name == buyer).turns
    assert len(buyer_turns) == 6
    # Each of the buyer's turns follows a fresh offer: it may accept or reject; never both
    # moves without an offer standing.
    assert all({"accept", "reject"} <= {o.name for o in t.moves} for t in buyer_turns[1:])


async def test_an_illegal_move_is_refused_asked_again_and_fails_after_three_asks() -> None:
    spec = example("bargaining", seed=0)
    first, second = spec.agent_names
    bad = GameMove(move="offer", amount=500)
    players = [ScriptedPlayer(first, [bad] * MAX_ASKS), ScriptedPlayer(second, [])]
    result = await play(spec, players)
    assert result.status is EpisodeStatus.FAILED and result.failed_agent == first
    assert result.reason == (
        f"{first}'s move was refused 3 times: 'offer' needs an amount from 0 to 100, not 500"
    )
    assert result.outcome is None
    refusals = [(text, to) for text, to in notices(result) if "refused" in text]
    assert len(refusals) == MAX_ASKS - 1 and all(to == (first,) for _, to in refusals)
    assert [t.turn_number for t in players[0].turns] == [0, 1, 2]
    assert not any(e.move for e in result.entries) and players[1].turns == []


async def test_an_agent_answering_with_a_conversation_action_fails_the_game() -> None:
    spec = example("bargaining", seed=0)
    first, second = spec.agent_names

    class Talker(ScriptedPlayer):
        async def act(self, turn: AgentTurn) -> Any:
            return AgentAction(action_type="speak", argument="hello")

    result = await play(spec, [Talker(first, []), ScriptedPlayer(second, [])])
    assert result.status is EpisodeStatus.FAILED and result.failed_agent == first
    assert "not a GameMove" in result.reason


async def test_an_agent_that_raises_fails_the_game_naming_it() -> None:
    spec = example("bargaining", seed=0)
    first, second = spec.agent_names
    result = await play(spec, [ScriptedPlayer(first, []), ScriptedPlayer(second, [])])
    assert result.status is EpisodeStatus.FAILED and result.failed_agent == first
    assert result.reason.startswith(f"{first} raised ScriptExhaustedError in turn 0")
