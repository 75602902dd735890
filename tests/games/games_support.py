"""Helpers of the games tests: the example games, small games built in place, players that
follow a policy, and ways to read a finished game's log."""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sotopia_are.games import GameResult, GameSpec, ScriptedPlayer, deal_roles, run_game
from sotopia_are.messages import GameMove
from sotopia_are.social import AgentTurn

EXAMPLES = Path(__file__).parents[2] / "examples" / "games"
NAMES = ["Ana Silva", "Ben Okoro", "Cleo Park", "Dev Rao", "Eli Stone", "Fay Moss", "Gus Hale"]


def example(name: str, **changes: Any) -> GameSpec:
    """The example game ``examples/games/<name>.json``, with ``changes`` to its fields."""
    spec = GameSpec.model_validate_json((EXAMPLES / f"{name}.json").read_text())
    return GameSpec.model_validate({**spec.model_dump(exclude_unset=True), **changes})


def small_game(count: int, game: dict[str, Any], **fields: Any) -> GameSpec:
    """A game of the first ``count`` of NAMES with the rules ``game``."""
    names = NAMES[:count]
    return GameSpec.model_validate(
        {
            "scenario": "A parlour game among friends.",
            "agent_names": names,
            "agent_backgrounds": [f"{name} likes games." for name in names],
            "agent_goals": ["Win."] * count,
            "game": game,
            **fields,
        }
    )


def by_role(spec: GameSpec) -> dict[str, list[str]]:
    """Who holds each role, in seat order."""
    holders: dict[str, list[str]] = {}
    for name, role in deal_roles(spec).items():
        holders.setdefault(role, []).append(name)
    return holders


Policy = Callable[[str, AgentTurn], GameMove]


def policy_players(spec: GameSpec, policy: Policy) -> list[ScriptedPlayer]:
    """One scripted player per participant, each moving by ``policy(name, turn)``."""
    return [
        ScriptedPlayer(name, lambda turn, name=name: policy(name, turn))
        for name in spec.agent_names
    ]


async def play(spec: GameSpec, players: Sequence[Any]) -> GameResult:
    return await run_game(spec, players)


def say(text: str = "Hm.") -> GameMove:
    return GameMove(move="say", argument=text)


def targets(turn: AgentTurn, move: str) -> tuple[str, ...]:
    """The targets ``turn`` offers for ``move``."""
    return next(option.targets for option in turn.moves if option.name == move)


def notices(result: GameResult) -> list[tuple[str, tuple[str, ...] | None]]:
    """Every ENV notice of the game's log: its text and its perceivers."""
    return [(e.content, e.to) for e in result.entries if e.action is None]


def eliminated_at(result: GameResult) -> dict[str, int]:
    """The turn each eliminated player was eliminated in (from the log's eliminate events)."""
    found = {}
    for event in result.events:
        if event.function_name() == "eliminate" and not event.failed():
            found[event.get_args()["participant"]] = round(event.event_time or 0.0)
    return found
