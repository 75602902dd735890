"""The rule-based game judge: an outcome verdict per finished game, computed from the
record's events, equal again after an export and an import (ARE JSON and JSONL), valid
under the import checks; payoff ranges; what it refuses."""

import asyncio
import json

import pytest
from games_support import example, small_game
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from sotopia_are.games import (
    GameJudge,
    GameSpec,
    RandomPlayer,
    outcome_of,
    outcome_verdict,
    payoff_range,
    rules_of,
    run_game,
)
from sotopia_are.record import (
    EpisodeRecord,
    NotRatableError,
    give_verdict,
    judge_key,
    load_record,
    record_from_are_json,
    record_of_result,
    record_problems,
)
from sotopia_are.social import EpisodeSpec, EpisodeStatus

FILES = ("werewolf", "werewolf_witch", "bargaining")


def played(name: str, seed: int) -> EpisodeRecord:
    spec = example(name, seed=seed)
    players = [RandomPlayer(n, seed) for n in spec.agent_names]
    return record_of_result(asyncio.run(run_game(spec, players)))


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(FILES), st.integers(0, 10_000))
def test_the_outcome_verdict_is_the_outcome_and_recomputes_equal_after_export_and_import(
    name: str, seed: int
) -> None:
    record = played(name, seed)
    assert record.status is EpisodeStatus.COMPLETE
    verdict = asyncio.run(give_verdict(record, GameJudge()))
    outcome = outcome_of(record.spec, record.entries)
    assert verdict.key == judge_key(GameJudge()) == "rules | game-outcome | outcome@1"
    assert verdict.rated and verdict.termination_reason == outcome.reason
    rules = rules_of(record.spec)
    for row in outcome.players:
        rating = verdict.evaluation.rating(row.name)
        assert rating.scores() == {"won": float(row.won), "payoff": float(row.payoff)}
        won, payoff = rating.dimensions["won"], rating.dimensions["payoff"]
        assert (won.low, won.high) == (0, 1)
        assert (payoff.low, payoff.high) == payoff_range(rules, rules.role(row.role))
        assert payoff.low <= row.payoff <= payoff.high
        assert row.role in won.reasonings[0]
    rated = record.with_verdict(verdict)
    assert record_problems(rated) == []
    # The verdict travels with the record and is computed again, equal, from the copy.
    for copy in (
        load_record(rated.to_json()),
        record_from_are_json(json.dumps(rated.trace().model_dump(mode="json"))),
    ):
        assert copy.verdicts == (verdict,)
        assert outcome_verdict(copy) == verdict
        assert copy.scores == rated.scores


def test_payoff_ranges_are_what_the_rules_allow_each_role() -> None:
    bargaining = rules_of(example("bargaining"))
    # A deal at 0..100 or none (0): the seller gets price - 40, the buyer 80 - price.
    assert payoff_range(bargaining, bargaining.role("seller")) == (-40, 60)
    assert payoff_range(bargaining, bargaining.role("buyer")) == (-20, 80)
    werewolf = rules_of(example("werewolf"))
    assert {payoff_range(werewolf, role) for role in werewolf.roles} == {(0, 1)}
    flat = small_game(
        2,
        {
            "roles": [
                {"name": "a", "team": "one", "payoff": {"win": 3, "lose": 3, "no_deal": 3}},
                {"name": "b", "team": "two"},
            ],
            "phases": [
                {"name": "vote", "actions": [{"name": "out", "kind": "target",
                                              "effect": "eliminate"}]}
            ],
            "ends": [{"when": "team_eliminated", "team": "two", "winners": ["one"]}],
        },
    )  # fmt: skip
    rules = rules_of(flat)
    # One possible payoff still gets a range that is not empty.
    assert payoff_range(rules, rules.role("a")) == (3, 4)


def test_a_fractional_payoff_is_refused_naming_the_field() -> None:
    data = example("bargaining").model_dump()
    data["game"]["roles"][0]["payoff"]["per_unit"] = 0.5
    with pytest.raises(ValidationError) as raised:
        GameSpec.model_validate(data)
    assert "game.roles.0.payoff.per_unit" in str(raised.value).replace("\n", ".")
    # A whole number written as a float is one.
    data["game"]["roles"][0]["payoff"]["per_unit"] = 2.0
    assert GameSpec.model_validate(data).game.roles[0].payoff.per_unit == 2


def test_a_log_that_is_not_a_finished_game_gets_a_verdict_without_ratings() -> None:
    record = played("bargaining", 3)
    moves = [i for i, e in enumerate(record.entries) if e.move is not None]
    last = record.entries[moves[-1]].event_id
    cut = record.model_copy(
        update={"events": tuple(e for e in record.events if e.event_id != last)}
    )
    verdict = outcome_verdict(cut)
    assert not verdict.rated and verdict.evaluation.ratings == []
    assert "did not end" in verdict.evaluation.failures[0].error


def test_the_judge_refuses_what_it_cannot_rate() -> None:
    record = played("werewolf", 1)
    failed = record.model_copy(update={"status": EpisodeStatus.FAILED})
    with pytest.raises(NotRatableError):
        asyncio.run(give_verdict(failed, GameJudge()))
    talk = EpisodeSpec(
        scenario="A chat.", agent_names=["A B", "C D"], agent_backgrounds=["", ""],
        agent_goals=["", ""],
    )  # fmt: skip
    with pytest.raises(ValueError, match="conversation, not a game"):
        outcome_verdict(record.model_copy(update={"spec": talk}))
