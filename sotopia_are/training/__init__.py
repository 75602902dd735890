"""Train on it: training data from rated episodes, and episodes as a PettingZoo env.

The data functions need nothing beyond the core install. :class:`ParallelSocialEnv` (on
conversations and on games, with PettingZoo's ``action_mask`` there) and the spaces need
the ``rl`` extra (``pip install 'sotopia-are[rl]'``: PettingZoo and
gymnasium); they are imported only when first used, with an error naming the extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .kinds import DEFAULT_PREFERENCE_DIMENSION, TrainingKind

if TYPE_CHECKING:
    from .data import (
        TrainingDataError,
        TrainingExample,
        TrainingFilters,
        TrainingManifest,
        export_preferences,
        export_sft,
        export_training_data,
        manifest_path,
        training_examples,
    )
    from .env import (
        DEFAULT_REWARD_WEIGHTS,
        OtherAgent,
        ParallelSocialEnv,
        TurnReward,
    )
    from .game_rewards import DEFAULT_GAME_REWARD_WEIGHTS, OUTCOME_SCORES
    from .game_spaces import IllegalMoveError, MoveChoice

__all__ = [
    "DEFAULT_GAME_REWARD_WEIGHTS",
    "DEFAULT_PREFERENCE_DIMENSION",
    "DEFAULT_REWARD_WEIGHTS",
    "OUTCOME_SCORES",
    "IllegalMoveError",
    "MoveChoice",
    "OtherAgent",
    "ParallelSocialEnv",
    "TrainingDataError",
    "TrainingExample",
    "TrainingFilters",
    "TrainingKind",
    "TrainingManifest",
    "TurnReward",
    "export_preferences",
    "export_sft",
    "export_training_data",
    "manifest_path",
    "training_examples",
]

# What needs the rl extra, and the module it is in.
_NEEDING_RL = {
    "DEFAULT_GAME_REWARD_WEIGHTS": ".game_rewards",
    "DEFAULT_REWARD_WEIGHTS": ".env",
    "OUTCOME_SCORES": ".game_rewards",
    "OtherAgent": ".env",
    "ParallelSocialEnv": ".env",
    "TurnReward": ".env",
    "IllegalMoveError": ".game_spaces",
    "MoveChoice": ".game_spaces",
}


# The data functions, loaded on first use: the command line's --help needs only .kinds.
_DATA = frozenset(
    {
        "TrainingDataError",
        "TrainingExample",
        "TrainingFilters",
        "TrainingManifest",
        "export_preferences",
        "export_sft",
        "export_training_data",
        "manifest_path",
        "training_examples",
    }
)


def __getattr__(name: str) -> Any:
    if name in _DATA:
        return getattr(importlib.import_module(".data", __name__), name)
    if name not in _NEEDING_RL:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        env = importlib.import_module(_NEEDING_RL[name], __name__)
    except ImportError as error:
        raise ImportError(
            f"sotopia_are.training.{name} needs the 'rl' extra: pip install 'sotopia-are[rl]' "
            f"({error})"
        ) from error
    return getattr(env, name)
