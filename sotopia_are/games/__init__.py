"""Social games as data, played on the event kernel.

A game is an episode spec with ``game`` rules (:class:`GameSpec`; a game file is its
JSON). :func:`run_game` plays it with agents: roles dealt by the seed
(:func:`deal_roles`), phases, resolutions and announcements as ENV events, every move an
AGENT event of the one log, each agent offered only its legal moves and refused (and
asked again) on an illegal one. :class:`GameOutcome` is how it ended, recomputed from a
finished game's log by :func:`outcome_of`; :class:`GameJudge` makes it a verdict (won,
payoff per player) beside any other judge's. :class:`ScriptedPlayer` and
:class:`RandomPlayer` play without a model.
"""

from .dealing import deal_roles
from .ends import EndedBy
from .judge import (
    GAME_JUDGE_MODEL,
    OUTCOME_RUBRIC,
    OUTCOME_VERSION,
    GameJudge,
    outcome_verdict,
    payoff_range,
)
from .legality import check_move
from .outcome import GameOutcome, PlayerOutcome
from .play import Ask, GamePlay
from .players import RandomPlayer, ScriptedPlayer
from .replay import outcome_of
from .runner import MAX_ASKS, GameResult, run_game
from .spec import GameSpec, rules_of
from .state import GameState

__all__ = [
    "GAME_JUDGE_MODEL",
    "MAX_ASKS",
    "OUTCOME_RUBRIC",
    "OUTCOME_VERSION",
    "Ask",
    "EndedBy",
    "GameJudge",
    "GameOutcome",
    "GamePlay",
    "GameResult",
    "GameSpec",
    "GameState",
    "PlayerOutcome",
    "RandomPlayer",
    "ScriptedPlayer",
    "check_move",
    "deal_roles",
    "outcome_of",
    "outcome_verdict",
    "payoff_range",
    "rules_of",
    "run_game",
]
