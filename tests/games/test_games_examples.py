"""Every shipped game file loads as a GameSpec and plays to an outcome."""

from pathlib import Path

import pytest
from games_support import EXAMPLES

from sotopia_are.games import GameSpec, RandomPlayer, deal_roles, outcome_of, run_game
from sotopia_are.social import EpisodeStatus

FILES = sorted(EXAMPLES.glob("*.json"))


def test_the_games_named_in_the_docs_are_shipped() -> None:
    assert {path.stem for path in FILES} >= {"werewolf", "werewolf_witch", "bargaining"}


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
async def test_an_example_game_loads_and_plays(path: Path) -> None:
    spec = GameSpec.model_validate_json(path.read_text())
    assert spec.name and not spec.id_given
    assert sorted(deal_roles(spec).values()) == sorted(
        role.name for role in spec.game.roles for _ in range(role.count)
    )
    result = await run_game(spec, [RandomPlayer(name, 1) for name in spec.agent_names])
    assert result.status is EpisodeStatus.COMPLETE, result.reason
    assert result.outcome == outcome_of(spec, result.entries)


def test_the_werewolf_games_have_their_cast() -> None:
    werewolf = GameSpec.model_validate_json((EXAMPLES / "werewolf.json").read_text())
    witch = GameSpec.model_validate_json((EXAMPLES / "werewolf_witch.json").read_text())
    assert len(werewolf.agent_names) == 7 and len(witch.agent_names) == 8
    assert werewolf.game.role("werewolf").count == 2 and werewolf.game.role("werewolf").knows_team
    potions = {a.name: a.uses_per_game for p in witch.game.phases for a in p.actions}
    assert potions["heal"] == potions["poison"] == 1
    assert werewolf.game.max_cycles == 4
