"""The offline stand-in plays whole games that end both ways.

LLM agents play the example games against ``play_rule`` through litellm's real HTTP path,
as a seeded study's repeats would (one sampling seed, an episode seed per game). Every move
is legal the first time it is asked for, and the outcomes vary: bargaining reaches a deal
in most games, at varied prices, and none in the others; each side wins some Werewolf games.
"""

import asyncio
from collections.abc import Callable
from pathlib import Path

from sotopia_are.agents import llm_agents_for
from sotopia_are.games import GameResult, GameSpec, run_game
from sotopia_are.llm import LLMSession, Sampling
from sotopia_are.social import EpisodeStatus
from sotopia_are.testing import LocalLLMServer, play_rule

EXAMPLES = Path(__file__).parents[2] / "examples" / "games"


async def play_repeats(
    name: str, games: int, llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> list[GameResult]:
    """``games`` games of ``examples/games/<name>.json`` (episode seeds 0, 1, ...) played by
    the stand-in; each is complete and no move was refused, by the game or the LLM layer."""
    llm_server.rule = play_rule
    session = make_session()
    base = GameSpec.model_validate_json((EXAMPLES / f"{name}.json").read_text())
    specs = [base.replace(seed=seed, episode_id=f"{name}-{seed}") for seed in range(games)]
    results = await asyncio.gather(
        *(
            run_game(spec, llm_agents_for(spec, "openai/m", session, sampling=Sampling(seed=0)))
            for spec in specs
        )
    )
    assert all(result.status is EpisodeStatus.COMPLETE for result in results)
    assert not any("refused" in e.content for r in results for e in r.entries if e.action is None)
    attempts = [attempt for call in session.calls for attempt in call.attempts]
    assert attempts and all(attempt.error_kind is None for attempt in attempts)
    return results


async def test_stand_in_bargaining_reaches_deals_at_varied_prices_and_sometimes_none(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    results = await play_repeats("bargaining", 20, llm_server, make_session)
    outcomes = [result.outcome for result in results if result.outcome is not None]
    deals = [outcome.deal for outcome in outcomes if outcome.deal is not None]
    assert len(outcomes) == 20 and 10 <= len(deals) < 20  # most, not all
    assert len(set(deals)) >= 3
    assert {outcome.ended_by for outcome in outcomes} == {"deal", "cycle_limit"}


async def test_stand_in_werewolf_games_are_won_by_each_side(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    results = await play_repeats("werewolf", 40, llm_server, make_session)
    winners = {result.outcome.winners for result in results if result.outcome is not None}
    assert {("village",), ("werewolves",)} <= winners
