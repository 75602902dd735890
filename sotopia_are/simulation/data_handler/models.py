"""The scenario JSON format: ARE's ``ExportedTrace`` and the models it is made of.

Field names, nesting and defaults follow ARE 1.2.0's ``are.simulation.data_handler.models``
so that files written by either implementation validate with the other. Where the seed
documentation is stricter than what ARE actually writes (``ExportedApp.app_state`` is
``null`` for stateless apps, simulation metadata ids are ``null`` when no agent ran), the
models accept what ARE writes.

Two additions, both optional and omitted from the JSON when unset, so ARE still reads our
files (its models ignore unknown fields):

- ``ExportedEvent.check`` — the importable callables of CONDITION and VALIDATION events,
  which ARE cannot export at all (see :mod:`.callables`).
- ``ExportedEventMetadata`` keeps ARE's string-encoded return values; how values are
  encoded is defined once, in :mod:`.values`.
"""

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_serializer
from pydantic_core.core_schema import SerializerFunctionWrapHandler

__all__ = [
    "TRACE_V1_VERSION",
    "AnyExportedEvent",
    "ExportedAction",
    "ExportedActionArg",
    "ExportedApp",
    "ExportedCompletedEvent",
    "ExportedEvent",
    "ExportedEventCheck",
    "ExportedEventMetadata",
    "ExportedExecutionMetadata",
    "ExportedHint",
    "ExportedHuggingFaceMetadata",
    "ExportedOracleEvent",
    "ExportedPlaceholderMetadata",
    "ExportedTrace",
    "ExportedTraceAnnotationMetadata",
    "ExportedTraceBase",
    "ExportedTraceDefinitionMetadata",
    "ExportedTraceMetadata",
    "ExportedTraceSimulationMetadata",
]

TRACE_V1_VERSION: str = "are_simulation_v1"
"""The only format version ARE 1.2.0 writes and reads, and the one we write."""


class _Model(BaseModel):
    """Base of every model here: unknown fields are ignored (as ARE does); types are strict,
    so `"5"` is not a number and `1` is not a bool. Each builds its validator and
    serializer when first used (``defer_build``): a batch uses none of them (its events
    are written without them), and building them all was some 50 M instructions of
    every command's start."""

    model_config = ConfigDict(extra="ignore", strict=True, defer_build=True)


class ExportedActionArg(_Model):
    """One argument of an action, its value encoded as a string (see :mod:`.values`)."""

    name: str
    value: str | None = None
    value_type: str | None = None


class ExportedAction(_Model):
    """The call an event makes: ``app.function(**args)``.

    Oracle events carry an empty ``action_id`` (ARE assigns one when they run).
    """

    action_id: str
    app: str | None = None
    function: str | None = None
    operation_type: str | None = None
    args: list[ExportedActionArg] | None = None


class ExportedEventCheck(_Model):
    """The Python callables of a CONDITION or VALIDATION event, as importable references.

    Each reference is ``"package.module:qualified_name"`` of a module-level function
    (see :mod:`.callables`). ``condition`` is set for condition events; ``milestones``
    and ``minefields`` for validation events.
    """

    condition: str | None = None
    milestones: list[str] = Field(default_factory=list)
    minefields: list[str] = Field(default_factory=list)
    schedule_every_ticks: int | None = None
    timeout: int | None = None


class ExportedEvent(_Model):
    """A scheduled event of a scenario.

    Exactly one of ``event_time`` (absolute) and ``event_relative_time`` (seconds after
    the latest of its ``dependencies``, or after the start) is normally set; a relative
    time is never negative (the kernel would run it at +0 as if nothing were wrong).
    """

    class_name: str
    event_type: str
    event_time: float | None
    event_id: str
    dependencies: list[str]
    event_relative_time: Annotated[float, Field(ge=0)] | None
    action: ExportedAction | None = None
    check: ExportedEventCheck | None = None

    @model_serializer(mode="wrap")
    def _omit_unset_check(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # ``check`` is our extension; leaving it out when unset keeps ordinary events
        # byte-for-byte in ARE's shape.
        data: dict[str, Any] = handler(self)
        if data.get("check", 0) is None:
            del data["check"]
        return data


class ExportedOracleEvent(ExportedEvent):
    """An expected agent action; ``event_time_comparator`` is ``LESS_THAN``,
    ``GREATER_THAN`` or ``EQUAL`` (or null: no time constraint)."""

    event_time_comparator: str | None = None


class ExportedEventMetadata(_Model):
    """What happened when a completed event ran: its return value or its exception."""

    return_value: str | None = None
    return_value_type: str | None = None
    exception: str | None = None
    exception_stack_trace: str | None = None


class ExportedCompletedEvent(_Model):
    """An event as it was executed, with the absolute time it ran at."""

    class_name: str
    event_type: str
    event_time: float
    event_id: str
    dependencies: list[str]
    event_relative_time: float | None
    action: ExportedAction | None = None
    metadata: ExportedEventMetadata | None = None


class ExportedHint(_Model):
    """Guidance for the agent, optionally tied to one event."""

    hint_type: str
    content: str
    associated_event_id: str | None = None


class ExportedHuggingFaceMetadata(_Model):
    """Where a benchmark scenario comes from on the Hugging Face Hub."""

    dataset: str
    split: str
    revision: str | None = None


class ExportedTraceDefinitionMetadata(_Model):
    """What defines the scenario: id, seed, timing, hints, tags."""

    scenario_id: str
    seed: int | None = None
    duration: float | None = None
    time_increment_in_seconds: int | None = None
    start_time: float | None = None
    run_number: int | None = None
    hints: list[ExportedHint] = Field(default_factory=list)
    config: str | None = None
    has_a2a_augmentation: bool = False
    has_tool_augmentation: bool = False
    has_env_events_augmentation: bool = False
    has_exception: bool = False
    exception_type: str | None = None
    exception_message: str | None = None
    tags: list[str] | None = None
    hf_metadata: ExportedHuggingFaceMetadata | None = None


class ExportedTraceSimulationMetadata(_Model):
    """Which agent and model produced the trace (null when none did, e.g. oracle runs)."""

    agent_id: str | None = None
    model_id: str | None = None


class ExportedTraceAnnotationMetadata(_Model):
    """Human review of the scenario; ``date`` is a Unix timestamp."""

    annotation_id: str | None = None
    annotator: str | None = None
    validation_decision: str | None = None
    comment: str | None = None
    date: float = 0.0


class ExportedPlaceholderMetadata(_Model):
    """A placeholder in an oracle event's args and the event it refers to (ARE)."""

    parent_tool_name: str
    parent_turn_idx: int
    parent_event_id: str
    placeholder_turn_idx: int
    placeholder_event_id: str


class ExportedExecutionMetadata(_Model):
    """Execution details ARE records for placeholder resolution; kept as read."""

    has_placeholder_conflicts: bool
    placeholders: list[ExportedPlaceholderMetadata]


class ExportedTraceMetadata(_Model):
    """All metadata of a trace; only ``definition`` is required."""

    definition: ExportedTraceDefinitionMetadata
    simulation: ExportedTraceSimulationMetadata | None = None
    annotation: ExportedTraceAnnotationMetadata | None = None
    execution: ExportedExecutionMetadata | None = None
    # ARE's ScenarioRunnerConfig; it configures ARE's runner, so it is carried opaquely.
    runner_config: dict[str, Any] | None = None


class ExportedApp(_Model):
    """An app of the scenario: its name, the class to build it from and its state.

    ``class_name`` falls back to ``name`` when null; ``app_state`` is null for apps
    without state.
    """

    name: str
    class_name: str | None = None
    app_state: dict[str, Any] | None = None


def _event_kind(data: Any) -> str:
    """Oracle events are told apart by class name or by their comparator field."""
    if isinstance(data, ExportedEvent):
        return type(data).__name__
    if isinstance(data, dict) and (
        data.get("class_name") == "OracleEvent" or "event_time_comparator" in data
    ):
        return "ExportedOracleEvent"
    return "ExportedEvent"


AnyExportedEvent = Annotated[
    Annotated[ExportedOracleEvent, Tag("ExportedOracleEvent")]
    | Annotated[ExportedEvent, Tag("ExportedEvent")],
    Discriminator(_event_kind),
]
"""A scheduled event, oracle or not; the tags never appear in the JSON."""


class ExportedTraceBase(_Model):
    """Everything of a trace except its metadata."""

    world_logs: list[str] = Field(default_factory=list)
    apps: list[ExportedApp] = Field(default_factory=list)
    events: list[AnyExportedEvent] = Field(default_factory=list)
    completed_events: list[ExportedCompletedEvent] = Field(default_factory=list)
    version: str
    context: str | None = None
    augmentation: dict[str, Any] | None = None


class ExportedTrace(ExportedTraceBase):
    """A complete scenario file: the root of the JSON format."""

    metadata: ExportedTraceMetadata
