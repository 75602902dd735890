"""The kinds of training file and the default preference score, importable alone (the
command line builds its options from them without loading the data functions)."""

from enum import StrEnum

__all__ = ["DEFAULT_PREFERENCE_DIMENSION", "TrainingKind"]

DEFAULT_PREFERENCE_DIMENSION = "goal"
"""The score that ranks a preference pair unless told otherwise (SOTOPIA-π's)."""


class TrainingKind(StrEnum):
    """What a training file holds: SFT examples or DPO preference pairs."""

    sft = "sft"
    preference = "preference"
