"""ARE's event model at ARE's import path: event types, actions, events, registration.

Everything ``are.simulation.types`` offers is importable from here, so ARE code ports by
changing the import root. The names live in small modules, one concept each:
:mod:`.actions` (what an event calls), :mod:`.events` (the event graph and its log
records), :mod:`.event_context` (which event owns the calls running in this thread or
task) and :mod:`.registration` (the ``event_registered`` decorator). Differences from
ARE: event ids can be made deterministic (see :mod:`.ids`), events carry no wall-clock
fields, and the "currently executing event" lives in a context variable rather than in
module globals, so environments in different threads or asyncio tasks never see each
other's state.
"""

from sotopia_are.simulation.actions import (
    AbstractEnvironment,
    Action,
    ActionDescription,
    ConditionCheckAction,
    EventMetadata,
    OperationType,
)
from sotopia_are.simulation.environment_config import EnvironmentState, EnvironmentType
from sotopia_are.simulation.event_context import current_event
from sotopia_are.simulation.events import (
    AbstractEvent,
    CompletedEvent,
    CompletedOracleEvent,
    ConditionCheckEvent,
    Event,
    EventTimeComparator,
    EventType,
    Hint,
    HintType,
    OracleEvent,
    StopEvent,
    ValidationEvent,
    ValidationResult,
)
from sotopia_are.simulation.registration import EventRegisterer, disable_events, event_registered
from sotopia_are.simulation.scenario_metadata import (
    CapabilityTag,
    ExecutionMetadata,
    PlaceholderMetadata,
    ScenarioGUIConfig,
    SimulatedGenerationTimeConfig,
    ToolAugmentationConfig,
)

__all__ = [
    "AbstractEnvironment",
    "AbstractEvent",
    "Action",
    "ActionDescription",
    "CapabilityTag",
    "CompletedEvent",
    "CompletedOracleEvent",
    "ConditionCheckAction",
    "ConditionCheckEvent",
    "EnvironmentState",
    "EnvironmentType",
    "Event",
    "EventMetadata",
    "EventRegisterer",
    "EventTimeComparator",
    "EventType",
    "ExecutionMetadata",
    "Hint",
    "HintType",
    "OperationType",
    "OracleEvent",
    "PlaceholderMetadata",
    "ScenarioGUIConfig",
    "SimulatedGenerationTimeConfig",
    "StopEvent",
    "ToolAugmentationConfig",
    "ValidationEvent",
    "ValidationResult",
    "current_event",
    "disable_events",
    "event_registered",
]
