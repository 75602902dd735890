"""Train on it: training data from rated episodes, and episodes as a PettingZoo env.

The data functions need nothing beyond the core install. :class:`ParallelSocialEnv` and
the spaces need the ``rl`` extra (``pip install 'sotopia-are[rl]'``: PettingZoo and
gymnasium); they are imported only when first used, with an error naming the extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .data import (
    DEFAULT_PREFERENCE_DIMENSION,
    TrainingDataError,
    TrainingExample,
    TrainingFilters,
    TrainingKind,
    TrainingManifest,
    export_preferences,
    export_sft,
    export_training_data,
    manifest_path,
    training_examples,
)

if TYPE_CHECKING:
    from .env import DEFAULT_REWARD_WEIGHTS, OtherAgent, ParallelSocialEnv, TurnReward

__all__ = [
    "DEFAULT_PREFERENCE_DIMENSION",
    "DEFAULT_REWARD_WEIGHTS",
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

_FROM_ENV = {"DEFAULT_REWARD_WEIGHTS", "OtherAgent", "ParallelSocialEnv", "TurnReward"}


def __getattr__(name: str) -> Any:
    if name not in _FROM_ENV:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        env = importlib.import_module(".env", __name__)
    except ImportError as error:
        raise ImportError(
            f"sotopia_are.training.{name} needs the 'rl' extra: pip install 'sotopia-are[rl]' "
            f"({error})"
        ) from error
    return getattr(env, name)
