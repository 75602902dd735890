"""ARE's events: the nodes of the event graph, and the log records of the ones that ran.

Part of ARE's event model (re-exported by :mod:`sotopia_are.simulation.types`). An event
has a type, an id, a time rule and its dependencies; what it does is an
:class:`~sotopia_are.simulation.actions.Action` (or a check of the environment). Events
carry no wall-clock fields, and ids can be made deterministic (see :mod:`.ids`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from sotopia_are.simulation.actions import (
    AbstractEnvironment,
    Action,
    ActionDescription,
    ConditionCheckAction,
    EventMetadata,
    OperationType,
    function_name,
)
from sotopia_are.simulation.event_context import run_action
from sotopia_are.simulation.ids import new_id

__all__ = [
    "AbstractEvent",
    "CompletedEvent",
    "CompletedOracleEvent",
    "ConditionCheckEvent",
    "Event",
    "EventTimeComparator",
    "EventType",
    "Hint",
    "HintType",
    "OracleEvent",
    "StopEvent",
    "ValidationEvent",
    "ValidationResult",
]


class EventType(enum.Enum):
    """Who initiated an event."""

    AGENT = "AGENT"
    ENV = "ENV"
    USER = "USER"
    CONDITION = "CONDITION"
    VALIDATION = "VALIDATION"
    STOP = "STOP"


class EventTimeComparator(enum.Enum):
    """How an agent event's time is compared with its oracle's time during validation."""

    LESS_THAN = "LESS_THAN"
    GREATER_THAN = "GREATER_THAN"
    EQUAL = "EQUAL"


class HintType(enum.Enum):
    """What a hint is about."""

    TASK_HINT = "TASK_HINT"
    ENVIRONMENT_HINT = "ENVIRONMENT_HINT"


@dataclass
class Hint:
    """A hint attached to an event of a scenario."""

    hint_type: HintType
    content: str
    associated_event_id: str | None = None


@dataclass(eq=False, slots=True)
class AbstractEvent:
    """A node of the event graph: a type, an id, a time rule and its dependencies.

    An event is due at ``event_time`` if set, else ``event_relative_time`` seconds after the
    last of its ``dependencies`` completed (after scheduling, for an event without any).
    Events compare by identity; the environment never mutates a scheduled event.
    """

    event_type: EventType = EventType.ENV
    event_time: float | None = None
    event_relative_time: float | None = None
    event_id: str = ""
    dependencies: list[AbstractEvent] = field(default_factory=list)
    successors: list[AbstractEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.event_id:
            self.event_id = f"{self.event_type.value}-{new_id()}"

    def depends_on(
        self,
        events: AbstractEvent | Sequence[AbstractEvent] | None = None,
        delay_seconds: float = 0,
    ) -> Self:
        """Run ``delay_seconds`` after all of ``events`` completed (None: after scheduling)."""
        if events is not None:
            for parent in [events] if isinstance(events, AbstractEvent) else events:
                if parent is self:
                    raise ValueError(f"event {self.event_id} cannot depend on itself")
                if not any(dep is parent for dep in self.dependencies):
                    self.dependencies.append(parent)
                    parent.successors.append(self)
        self.event_relative_time = delay_seconds
        return self

    def followed_by(
        self,
        events: AbstractEvent | Sequence[AbstractEvent],
        delay_seconds: float = 0,
    ) -> Self:
        """Make each of ``events`` run ``delay_seconds`` after this event completed."""
        for child in [events] if isinstance(events, AbstractEvent) else events:
            child.depends_on(self, delay_seconds)
        return self

    def delayed(self, delay_seconds: float) -> Self:
        """Run ``delay_seconds`` after scheduling (or after the dependencies completed)."""
        self.event_relative_time = delay_seconds
        return self

    def at_absolute_time(self, event_time: float) -> Self:
        """Run at simulated time ``event_time`` (or as soon as ready, if that has passed)."""
        self.event_time = event_time
        return self

    def with_id(self, event_id: str) -> Self:
        """Set the event id (referenced by ``{{event_id.key}}`` placeholders and exports)."""
        self.event_id = event_id
        return self

    def with_type(self, event_type: EventType) -> Self:
        """Set the event type."""
        self.event_type = event_type
        return self


# Weakly referable: its export for the store is kept with it for its record
# (data_handler.exporter.export_and_keep).
@dataclass(eq=False, slots=True, weakref_slot=True)
class CompletedEvent(AbstractEvent):
    """The log record of an event that ran: its action, the time it ran, and the outcome.

    ``event_time`` is the simulated time the event was due (ARE's scheduled tick); on a
    real clock, ``measured_time`` holds the clock's time when it actually ran, if later.
    """

    action: Action | ConditionCheckAction | None = None
    metadata: EventMetadata = field(default_factory=EventMetadata)
    measured_time: float | None = None

    def failed(self) -> bool:
        """Whether the action raised."""
        return self.metadata.exception is not None

    def get_exception(self) -> str | None:
        """The exception the action raised, as "Type: message"."""
        return self.metadata.exception

    def app_name(self) -> str:
        """The app the action called ("" if none)."""
        return self.action.app_name if self.action is not None else ""

    def app_class_name(self) -> str | None:
        """The class name of the app the action called (None for a check or a function)."""
        if isinstance(self.action, Action) and self.action.app is not None:
            return type(self.action.app).__name__
        return None

    @property
    def tool_name(self) -> str:
        """``"<AppClass>__<function>"``, as ARE's validation names a tool call."""
        return f"{self.app_class_name() or 'NoApp'}__{self.function_name() or 'NoFunction'}"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompletedEvent:
        """The record :meth:`to_dict` (or ARE's ``to_dict``) wrote, without live objects: the
        action's function is a stub named as the recorded one and raising if called, its
        app None; dependencies keep only their ids (as events without action)."""
        action_data = data.get("action") or None
        action: Action | None = None
        if action_data:
            name = action_data.get("function") or action_data.get("function_name") or ""
            action = Action(
                function=_recorded_function(str(name)),
                args=dict(action_data.get("args") or {}),
                resolved_args=dict(action_data.get("resolved_args") or {}),
                action_id=str(action_data.get("action_id") or ""),
                operation_type=OperationType(
                    str(action_data.get("operation_type") or "read").lower()
                ),
            )
        metadata = data.get("metadata") or {}
        return cls(
            event_type=EventType(data["event_type"]),
            event_time=data.get("event_time"),
            event_relative_time=data.get("event_relative_time"),
            event_id=str(data["event_id"]),
            dependencies=[
                AbstractEvent(event_id=str(dep)) for dep in data.get("dependencies") or []
            ],
            action=action,
            metadata=EventMetadata(
                return_value=metadata.get("return_value"),
                exception=metadata.get("exception"),
                exception_stack_trace=metadata.get("exception_stack_trace"),
                completed=metadata.get("completed", True),
            ),
        )

    def function_name(self) -> str:
        """The function the action called ("" if none)."""
        return self.action.function_name if self.action is not None else ""

    def get_args(self) -> dict[str, Any]:
        """The args the action was called with (resolved placeholders included), without
        the app itself (``self``, which captured calls carry, as in ARE)."""
        if isinstance(self.action, Action):
            args = self.action.resolved_args or self.action.args
            if "self" in args:
                return {name: value for name, value in args.items() if name != "self"}
            return args
        return {}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view of the record (values that are not JSON become their repr)."""
        action: dict[str, Any] | None = None
        if self.action is not None:
            action = {
                "action_id": self.action.action_id,
                "app": self.action.app_name,
                "function": self.action.function_name,
                "args": _jsonable(self.get_args()),
                "operation_type": self.action.operation_type.value
                if isinstance(self.action, Action)
                else None,
            }
        return {
            "class_name": type(self).__name__,
            "event_type": self.event_type.value,
            "event_time": self.event_time,
            "event_id": self.event_id,
            "dependencies": [dep.event_id for dep in self.dependencies],
            "event_relative_time": self.event_relative_time,
            "action": action,
            "metadata": {
                "return_value": _jsonable(self.metadata.return_value),
                "exception": self.metadata.exception,
                "exception_stack_trace": self.metadata.exception_stack_trace,
                "completed": self.metadata.completed,
            },
        } | ({} if self.measured_time is None else {"measured_time": self.measured_time})


def _recorded_function(name: str) -> Callable[..., Any]:
    """A stand-in for a recorded call's function: it has the name, and cannot be run."""

    def recorded(**_: Any) -> Any:
        raise RuntimeError(f"{name} was read from a record and cannot be run again")

    recorded.__name__ = recorded.__qualname__ = name or "recorded"
    return recorded


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    return repr(value)


@dataclass(eq=False, slots=True)
class Event(AbstractEvent):
    """An event that calls an :class:`Action` when it runs."""

    action: Action | None = None

    @staticmethod
    def from_function(
        function: Callable[..., Any], event_type: EventType = EventType.ENV, **kwargs: Any
    ) -> Event:
        """An event calling ``function(**kwargs)``; an ``event_registered`` method keeps its
        operation type."""
        operation_type = getattr(function, "__operation_type__", OperationType.READ)
        return Event(
            event_type=event_type,
            action=Action(function=function, args=kwargs, operation_type=operation_type),
        )

    def app_class_name(self) -> str | None:
        """The class name of the app the action calls (None without one)."""
        app = self.action.app if self.action is not None else None
        return type(app).__name__ if app is not None else None

    def app_name(self) -> str | None:
        """The name of the app the action calls (None without one)."""
        app = self.action.app if self.action is not None else None
        return app.name if app is not None else None

    def function_name(self) -> str | None:
        """The name of the function the action calls (None without an action)."""
        return self.action.function_name if self.action is not None else None

    def oracle(self) -> OracleEvent:
        """The oracle version of this event: what the agent is expected to do."""
        return OracleEvent.from_event(self)

    def execute(
        self, fire_individual_events: bool = False, *, event_time: float | None = None
    ) -> CompletedEvent:
        """Run the action as one transaction and return its single :class:`CompletedEvent`.

        Decorated app calls made inside the action are not logged on their own unless
        ``fire_individual_events``. ``event_time`` is the time recorded (default: the
        event's own ``event_time``).
        """
        if self.action is None:
            raise ValueError(f"event {self.event_id} has no action to execute")
        _, metadata = run_action(None if fire_individual_events else self, self.action.execute)
        return CompletedEvent(
            event_type=self.event_type,
            event_time=self.event_time if event_time is None else event_time,
            event_id=self.event_id,
            dependencies=list(self.dependencies),
            event_relative_time=self.event_relative_time,
            action=self.action,
            metadata=metadata,
        )


@dataclass(eq=False, slots=True)
class OracleEvent(AbstractEvent):
    """An expected agent action, executed only when the environment is in oracle mode.

    ``make_event(env)`` builds the event to run; ``action_desc`` describes it for exports.
    """

    event_type: EventType = EventType.AGENT
    make_event: Callable[[AbstractEnvironment], AbstractEvent] | None = None
    action_desc: ActionDescription | None = None
    event_time_comparator: EventTimeComparator | None = None

    @staticmethod
    def from_event(event: Event) -> OracleEvent:
        """The oracle of ``event``: same id, timing and dependencies, run as an AGENT event.

        Parents that listed ``event`` as a successor now list the oracle instead.
        """
        if event.action is None:
            raise ValueError(f"event {event.event_id} has no action to make an oracle of")
        action = event.action

        def make_event(_env: AbstractEnvironment) -> AbstractEvent:
            return Event(
                event_type=EventType.AGENT,
                event_id=oracle.event_id,
                action=Action(
                    function=action.function,
                    args=dict(action.args),
                    app=action.app,
                    action_id=action.action_id,
                    operation_type=action.operation_type,
                    tool_metadata=action.tool_metadata,
                ),
            )

        oracle = OracleEvent(
            event_time=event.event_time,
            event_relative_time=event.event_relative_time,
            event_id=event.event_id,
            dependencies=list(event.dependencies),
            successors=list(event.successors),
            make_event=make_event,
            action_desc=ActionDescription(
                app=action.app_name,
                function=action.function_name,
                args=[{"name": name, "value": value} for name, value in action.args.items()],
            ),
        )
        for parent in oracle.dependencies:
            parent.successors[:] = [oracle if s is event else s for s in parent.successors]
        for child in oracle.successors:
            child.dependencies[:] = [oracle if d is event else d for d in child.dependencies]
        return oracle

    def with_comparator(self, comparator: EventTimeComparator) -> Self:
        """Set how the agent's timing is compared with this oracle's."""
        self.event_time_comparator = comparator
        return self


@dataclass(eq=False, slots=True)
class CompletedOracleEvent(CompletedEvent):
    """A completed event produced by an oracle, with the oracle's time expectations."""

    absolute_event_time: float | None = None
    event_time_comparator: EventTimeComparator | None = None

    @staticmethod
    def from_completed_event_and_oracle_event(
        completed: CompletedEvent, oracle: OracleEvent
    ) -> CompletedOracleEvent:
        """The oracle's record: the completed run under the oracle's id and dependencies."""
        return CompletedOracleEvent(
            event_type=completed.event_type,
            event_time=completed.event_time,
            event_id=oracle.event_id,
            dependencies=list(oracle.dependencies),
            event_relative_time=oracle.event_relative_time,
            action=completed.action,
            metadata=completed.metadata,
            absolute_event_time=oracle.event_time,
            event_time_comparator=oracle.event_time_comparator,
        )


@dataclass(eq=False, slots=True)
class ConditionCheckEvent(AbstractEvent):
    """Checks ``action(env)`` every ``schedule_every_ticks`` ticks until it holds.

    It completes (and releases its successors) only when the condition holds; after
    ``timeout`` ticks without success it gives up and its successors never run.
    """

    event_type: EventType = EventType.CONDITION
    action: ConditionCheckAction | None = None
    schedule_every_ticks: int = 1
    timeout: int | None = None

    def __post_init__(self) -> None:
        AbstractEvent.__post_init__(self)  # slots dataclasses break zero-argument super()
        if self.schedule_every_ticks < 1:
            raise ValueError(f"schedule_every_ticks must be >= 1, got {self.schedule_every_ticks}")

    @staticmethod
    def from_condition(
        condition: Callable[[AbstractEnvironment], bool],
        every_tick: int = 1,
        timeout: int | None = None,
    ) -> ConditionCheckEvent:
        """A check of ``condition`` every ``every_tick`` ticks, giving up after ``timeout``."""
        return ConditionCheckEvent(
            action=ConditionCheckAction(function=condition),
            schedule_every_ticks=every_tick,
            timeout=timeout,
        )


@dataclass
class ValidationResult:
    """The outcome of a validation: success, why, and which checks failed or fired."""

    success: bool
    message: str = ""
    failed_milestones: list[Callable[[AbstractEnvironment], bool]] = field(default_factory=list)
    triggered_minefields: list[Callable[[AbstractEnvironment], bool]] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class ValidationEvent(AbstractEvent):
    """Checks the environment every few ticks: all milestones must be reached, no minefield.

    Succeeds once every milestone has held at some check; fails as soon as a minefield
    holds, or when ``timeout`` ticks pass with milestones still unmet.
    """

    event_type: EventType = EventType.VALIDATION
    milestones: list[Callable[[AbstractEnvironment], bool]] = field(default_factory=list)
    minefields: list[Callable[[AbstractEnvironment], bool]] = field(default_factory=list)
    schedule_every_ticks: int = 1
    timeout: int | None = None

    def validate(
        self, env: AbstractEnvironment, achieved: set[int] | None = None
    ) -> ValidationResult:
        """One check. ``achieved`` (indices of milestones already met) is updated in place."""
        achieved = set() if achieved is None else achieved
        triggered = [minefield for minefield in self.minefields if minefield(env)]
        if triggered:
            names = ", ".join(function_name(m) for m in triggered)
            return ValidationResult(False, f"minefield triggered: {names}", [], triggered)
        for index, milestone in enumerate(self.milestones):
            if index not in achieved and milestone(env):
                achieved.add(index)
        failed = [m for i, m in enumerate(self.milestones) if i not in achieved]
        if failed:
            names = ", ".join(function_name(m) for m in failed)
            return ValidationResult(False, f"milestones not reached: {names}", failed, [])
        return ValidationResult(True, "all milestones reached")


@dataclass(eq=False, slots=True)
class StopEvent(AbstractEvent):
    """Stops the environment when it runs."""

    event_type: EventType = EventType.STOP
