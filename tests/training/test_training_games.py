"""ParallelSocialEnv on games: random masked policies play the example games to valid
outcomes, the mask is exactly the legal moves (every masked choice is accepted, every other
refused with the game's reason and nothing played), rewards come from the outcome,
eliminated players wait for theirs, PettingZoo's API test passes on a game, and a game
played in the env is stored like any other."""

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import parallel_api_test

import sotopia_are as sa
from sotopia_are.games import GameSpec, RandomPlayer, deal_roles, outcome_of
from sotopia_are.messages import AgentAction, GameMove
from sotopia_are.social import AgentTurn
from sotopia_are.storage import EpisodeStore
from sotopia_are.training import IllegalMoveError, MoveChoice, ParallelSocialEnv
from sotopia_are.training.game_spaces import move_of

EXAMPLES = Path(__file__).parents[2] / "examples" / "games"
FILES = ("werewolf", "werewolf_witch", "bargaining")


def example(name: str, **changes: Any) -> GameSpec:
    spec = GameSpec.model_validate_json((EXAMPLES / f"{name}.json").read_text())
    return GameSpec.model_validate({**spec.model_dump(exclude_unset=True), **changes})


def words_for(choice: MoveChoice, name: str, step: int) -> str:
    return f"{name} speaks in step {step}." if choice.kind == "speak" else ""


def masked_action(env: ParallelSocialEnv, name: str, mask: np.ndarray, step: int) -> object:
    """A choice sampled from ``mask`` by the action space; a speech choice with words."""
    index = int(env.action_space(name).sample(mask=mask))
    choice = env.move_choices[index]
    if choice.kind == "speak":
        return {"choice": index, "argument": words_for(choice, name, step)}
    return index


def check_mask_is_the_legal_moves(env: ParallelSocialEnv, name: str, info: dict[str, Any]) -> None:
    """Every choice the mask allows is accepted as a move; every other is refused."""
    options = info["turn"].moves if info["turn"] is not None else ()
    mask = env.observation_space(name)["action_mask"]
    assert mask.n == len(env.move_choices)
    for index, choice in enumerate(env.move_choices):
        action = {"choice": index, "argument": words_for(choice, name, 0)}
        try:
            move_of(action, agent=name, choices=env.move_choices, options=options)
        except IllegalMoveError:
            legal = False
        else:
            legal = True
        assert legal == choice.legal_in(options), (name, choice)


def play_out(
    env: ParallelSocialEnv, seed: int, *, check_masks: bool = False
) -> tuple[int, dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
    """Play the env's game with a random masked policy for every caller's agent."""
    env.action_space(env.possible_agents[0]).seed(seed)
    for name in env.possible_agents:
        env.action_space(name).seed(seed)
    observations, infos = env.reset(seed=seed)
    step = 0
    while True:
        actions = {}
        for name in env.agents:
            observation = observations[name]
            assert env.observation_space(name).contains(observation), name
            mask = observation["action_mask"]
            asked = infos[name]["turn"] is not None
            assert bool(mask.any()) == asked, (name, step)
            assert bool(observation["observation"]["legal_moves"]) == asked
            if check_masks:
                check_mask_is_the_legal_moves(env, name, infos[name])
            if asked:
                actions[name] = masked_action(env, name, mask, step)
        observations, rewards, terminations, truncations, infos = env.step(actions)
        step += 1
        if not env.agents:
            return step, rewards, terminations, truncations, infos


@settings(max_examples=6, deadline=None)
@given(file=st.sampled_from(FILES), seed=st.integers(0, 10_000))
def test_a_random_masked_policy_plays_a_game_to_a_valid_outcome(file: str, seed: int) -> None:
    spec = example(file)
    env = ParallelSocialEnv(spec)
    assert env.possible_agents == spec.agent_names
    _, rewards, terminations, truncations, infos = play_out(env, seed, check_masks=True)
    env.close()
    record = env.record
    assert record is not None and record.status is sa.EpisodeStatus.COMPLETE
    outcome = outcome_of(record.spec, record.entries)
    assert all(terminations.values()) and not any(truncations.values())
    assert set(rewards) == set(spec.agent_names)
    for name in spec.agent_names:
        row = outcome.player(name)
        assert infos[name]["outcome"] == outcome
        assert rewards[name] == row.payoff
        assert row.role == deal_roles(record.spec)[name]
    assert outcome.ended_by in ("team_eliminated", "team_parity", "deal", "cycle_limit")
    assert outcome.reason == record.reason


def werewolf_env(**kwargs: Any) -> ParallelSocialEnv:
    return ParallelSocialEnv(example("werewolf"), **kwargs)


def test_an_action_outside_the_mask_is_refused_with_the_reason_and_nothing_played() -> None:
    env = werewolf_env()
    observations, infos = env.reset(seed=4)
    # Day discussion, round-robin: the first seat speaks first.
    speaker = next(name for name in env.agents if infos[name]["turn"] is not None)
    mask = observations[speaker]["action_mask"]
    assert infos[speaker]["turn"].phase == observations[speaker]["observation"]["phase"]
    assert "say (words)" in observations[speaker]["observation"]["legal_moves"]
    vote = next(i for i, c in enumerate(env.move_choices) if c.move == "vote")
    say = next(i for i, c in enumerate(env.move_choices) if c.move == "say")
    assert mask[vote] == 0 and mask[say] == 1
    with pytest.raises(IllegalMoveError) as refused:
        env.step({speaker: vote})
    assert refused.value.agent == speaker
    assert "is not a move you may make now (you may: 'say')" in refused.value.reason
    with pytest.raises(IllegalMoveError, match="needs something to say"):
        env.step({speaker: say})  # a speech choice without its words
    with pytest.raises(IllegalMoveError, match="takes no target"):
        env.step({speaker: GameMove(move="say", target=speaker, argument="Hi")})
    with pytest.raises(ValueError, match=r"choice 999 is not in 0\.\.28"):
        env.step({speaker: 999})
    with pytest.raises(ValueError, match="no action for"):
        env.step({})
    # Nothing was played: the speaker is still the one asked, and speaks now.
    observations, _, _, _, infos = env.step(
        {speaker: GameMove(move="say", argument="I refused nothing.").model_dump_json()}
    )
    transcript = observations[speaker]["observation"]["transcript"]
    assert transcript.count("I refused nothing.") == 1 and "vote" not in transcript.lower()
    assert infos[speaker]["turn"] is None
    env.close()


def asked(infos: dict[str, dict[str, Any]]) -> list[str]:
    return [name for name, info in infos.items() if info["turn"] is not None]


def test_a_vote_for_a_player_the_rules_exclude_is_refused() -> None:
    env = werewolf_env()
    say = env.move_choices.index(MoveChoice("say", "speak"))
    observations, infos = env.reset(seed=4)
    while infos[asked(infos)[0]]["turn"].phase != "day-vote":
        actions = {name: {"choice": say, "argument": "Hm."} for name in asked(infos)}
        observations, _, _, _, infos = env.step(actions)
    voters = asked(infos)
    assert voters == env.agents  # everyone votes at once
    themselves = {
        name: env.move_choices.index(MoveChoice("vote", "target", target=name)) for name in voters
    }
    assert all(observations[name]["action_mask"][themselves[name]] == 0 for name in voters)
    with pytest.raises(IllegalMoveError, match=r"'vote' cannot target"):
        env.step(themselves)
    env.close()


def test_a_deal_pays_each_side_its_payoff_and_the_weights_say_how_much_counts() -> None:
    spec = example("bargaining")
    made: list[tuple[str, str, GameMove]] = []

    def per_move(name: str, turn: AgentTurn, move: AgentAction | GameMove) -> float:
        assert isinstance(move, GameMove)
        made.append((name, turn.phase, move))
        return 0.25

    env = ParallelSocialEnv(spec, reward_weights={"won": 2.0, "payoff": 1.0}, turn_reward=per_move)
    observations, infos = env.reset(seed=1)
    first = next(name for name in env.agents if infos[name]["turn"] is not None)
    offer = env.move_choices.index(MoveChoice("offer", "offer", amount=60))
    observations, rewards, *_, infos = env.step({first: offer})
    assert rewards[first] == 0.25 and made == [
        (first, "haggling", GameMove(move="offer", amount=60))
    ]
    second = next(name for name in env.agents if infos[name]["turn"] is not None)
    accept = env.move_choices.index(MoveChoice("accept", "accept"))
    assert second != first and observations[second]["action_mask"][accept] == 1
    _, rewards, terminations, _, infos = env.step({second: accept})
    assert not env.agents and all(terminations.values())
    outcome = infos[first]["outcome"]
    assert outcome.ended_by == "deal" and outcome.deal == 60
    roles = deal_roles(env.record.spec if env.record else spec)
    payoff = {"seller": 60 - 40, "buyer": 80 - 60}
    assert rewards[first] == 2.0 + payoff[roles[first]]
    assert rewards[second] == 0.25 + 2.0 + payoff[roles[second]]
    env.close()


def test_reward_weights_must_name_outcome_scores() -> None:
    with pytest.raises(ValueError, match=r"reward_weights name \['goal'\]"):
        ParallelSocialEnv(example("bargaining"), reward_weights={"goal": 1.0})


def test_an_eliminated_player_waits_unasked_for_its_reward_at_the_end() -> None:
    env = werewolf_env()
    eliminated_seen: set[str] = set()
    for seed in range(20):
        observations, infos = env.reset(seed=seed)
        step = 0
        while env.agents:
            for name in env.agents:
                if not infos[name]["alive"]:
                    eliminated_seen.add(name)
                    assert not observations[name]["action_mask"].any()
                    assert infos[name]["turn"] is None
            actions = {
                name: masked_action(env, name, observations[name]["action_mask"], step)
                for name in env.agents
                if infos[name]["turn"] is not None
            }
            observations, rewards, terminations, _, infos = env.step(actions)
            step += 1
            assert all(terminations.values()) == (not env.agents)
        record = env.record
        assert record is not None
        outcome = outcome_of(record.spec, record.entries)
        dead_winners = [row for row in outcome.players if row.won and not row.alive]
        for row in outcome.players:
            assert rewards[row.name] == row.payoff
            assert infos[row.name]["alive"] == row.alive
        if dead_winners:
            break
    env.close()
    assert eliminated_seen and dead_winners, "no seed eliminated a winner"
    assert all(row.payoff == 1.0 for row in dead_winners)


def voting_game() -> GameSpec:
    """A game without speech (so any masked choice is a whole move): a day vote, a kill."""
    names = ["Ana Silva", "Ben Okoro", "Cleo Park", "Dev Rao", "Eli Stone"]
    return GameSpec.model_validate(
        {
            "scenario": "A parlour game among friends.",
            "agent_names": names,
            "agent_backgrounds": [f"{name} likes games." for name in names],
            "agent_goals": ["Win."] * len(names),
            "game": {
                "roles": [
                    {"name": "wolf", "team": "wolves", "knows_team": True},
                    {"name": "villager", "team": "village", "count": 4},
                ],
                "phases": [
                    {
                        "name": "vote",
                        "order": "simultaneous",
                        "actions": [
                            {"name": "vote", "kind": "target", "effect": "eliminate"},
                        ],
                    },
                    {
                        "name": "night",
                        "actors": {"team": "wolves"},
                        "actions": [
                            {
                                "name": "kill",
                                "kind": "target",
                                "targets": "outside_team",
                                "effect": "eliminate",
                                "audience": "team",
                            },
                        ],
                    },
                ],
                "ends": [
                    {"when": "team_eliminated", "team": "wolves", "winners": ["village"]},
                    {"when": "team_parity", "team": "wolves", "winners": ["wolves"]},
                ],
                "max_cycles": 3,
            },
        }
    )


def test_pettingzoo_parallel_api_test_passes_on_a_game() -> None:
    spec = voting_game()
    env = ParallelSocialEnv(spec, others={"Eli Stone": lambda s: RandomPlayer("Eli Stone", s.seed)})
    parallel_api_test(env, num_cycles=100)
    env.close()


def test_a_game_in_the_env_is_stored_with_its_players_and_outcome(store: EpisodeStore) -> None:
    spec = example("werewolf")
    others = {name: (lambda s, n=name: RandomPlayer(n, s.seed)) for name in spec.agent_names[4:]}
    env = ParallelSocialEnv(spec, others=others, store=store, tag="games", models={})
    assert env.possible_agents == spec.agent_names[:4]
    play_out(env, 7)
    env.close()
    record = env.record
    # As JSON: the record holds the GameSpec it was played with, the store gives back the
    # EpisodeSpec with ``game`` that a record's spec is read as.
    assert record is not None and store.load(record.episode_id).to_json() == record.to_json()
    assert record.status is sa.EpisodeStatus.COMPLETE and record.tag == "games"
    # Everyone's moves are in the one log, the caller's and the env's own players' alike.
    movers = {entry.sender for entry in record.entries if entry.move is not None}
    assert set(spec.agent_names[:4]) & movers and set(spec.agent_names[4:]) & movers
    assert outcome_of(record.spec, store.load(record.episode_id).entries).reason == record.reason
