"""The descriptive values ARE attaches to scenarios and runs, at ARE's names and fields.

They carry data only (tags, GUI and tool-augmentation settings, placeholder bookkeeping of
exported traces); the kernel never acts on them. Re-exported by
:mod:`sotopia_are.simulation.types`, ARE's import path.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "CapabilityTag",
    "ExecutionMetadata",
    "PlaceholderMetadata",
    "ScenarioGUIConfig",
    "SimulatedGenerationTimeConfig",
    "ToolAugmentationConfig",
]


class CapabilityTag(enum.Enum):
    """What a scenario exercises (ARE's tags, Gaia2's among them)."""

    Planning = "Planning"
    Memory = "Memory"
    Collaboration = "Collaboration"
    Exploration = "Exploration"
    UnitTest = "UnitTest"
    PromptInjection = "PromptInjection"
    Universe = "Universe"
    Safety = "Safety"
    Adaptability = "Adaptability"
    Ambiguity = "Ambiguity"
    Execution = "Execution"
    Search = "Search"
    Time = "Time"
    Security = "Security"

    @classmethod
    def gaia2_capabilities(cls) -> list[CapabilityTag]:
        """The five capabilities Gaia2 scores."""
        return [cls.Ambiguity, cls.Adaptability, cls.Execution, cls.Search, cls.Time]


@dataclass
class ScenarioGUIConfig:
    """How ARE's GUI shows a scenario (kept for files; this project has no ARE GUI)."""

    show_timestamps: bool = False


@dataclass
class ToolAugmentationConfig:
    """Perturbations of the agent's tools: random failures, renamed or reworded tools."""

    tool_failure_probability: float = 0.1
    apply_tool_name_augmentation: bool = True
    apply_tool_description_augmentation: bool = True


@dataclass
class SimulatedGenerationTimeConfig:
    """How long a model's generation counts in simulated time: ``fixed`` (``seconds``) or
    ``measured`` (as measured). ValueError for ``fixed`` without ``seconds``."""

    mode: Literal["fixed", "measured"] = "measured"
    seconds: float | None = 1.0

    def __post_init__(self) -> None:
        if self.mode == "fixed" and self.seconds is None:
            raise ValueError("SimulatedGenerationTimeConfig: mode 'fixed' needs seconds")


@dataclass
class PlaceholderMetadata:
    """Where a placeholder of an exported trace points: the parent tool call and turn."""

    parent_tool_name: str
    parent_turn_idx: int
    parent_event_id: str
    placeholder_turn_idx: int
    placeholder_event_id: str


@dataclass
class ExecutionMetadata:
    """The placeholders of an exported trace and whether any of them conflict."""

    has_placeholder_conflicts: bool
    placeholders: list[PlaceholderMetadata] = field(default_factory=list)
