"""What an event does when it runs: the call it makes, and what the call returned.

Part of ARE's event model (re-exported by :mod:`sotopia_are.simulation.types`): the
:class:`Action` an event calls, the predicate of a condition check, the description of
an oracle's expected call, the :class:`EventMetadata` of a finished call, and the
:class:`AbstractEnvironment` interface those calls may read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.ids import new_id
from sotopia_are.simulation.tool_utils import OperationType

if TYPE_CHECKING:
    from sotopia_are.simulation.event_log import EventLog

__all__ = [
    "AbstractEnvironment",
    "Action",
    "ActionDescription",
    "ConditionCheckAction",
    "EventMetadata",
    "OperationType",
    "function_name",
]


class AbstractEnvironment(ABC):
    """What conditions, validations and oracle events may ask of an environment."""

    @abstractmethod
    def get_app(self, app_name: str) -> App:
        """The registered app called ``app_name``; KeyError if there is none."""

    @property
    @abstractmethod
    def current_time(self) -> float:
        """The simulated time now, in seconds."""

    @property
    @abstractmethod
    def event_log(self) -> EventLog:
        """Every completed event so far, in time order."""


def function_name(function: Callable[..., Any]) -> str:
    """``function``'s name, or its type's name for a callable object without one."""
    try:
        return function.__name__
    except AttributeError:
        return type(function).__name__


@dataclass(eq=False, slots=True)
class Action:
    """A call to make when an event runs: ``function(**args)``, usually a bound app method.

    ``app`` is deduced from a bound method when not given; ``resolved_args`` (placeholders
    replaced by past return values) win over ``args`` at execution time when set.
    """

    function: Callable[..., Any]
    args: dict[str, Any] = field(default_factory=dict)
    resolved_args: dict[str, Any] = field(default_factory=dict)
    app: App | None = None
    action_id: str = ""
    operation_type: OperationType = OperationType.READ
    tool_metadata: Any = None

    def __post_init__(self) -> None:
        if self.app is None:
            owner = getattr(self.function, "__self__", None)
            if isinstance(owner, App):
                self.app = owner
        if not self.action_id:
            self.action_id = f"{self.app_name}.{self.function_name}-{new_id()}"

    @property
    def app_name(self) -> str:
        """The app's name, or "" for a plain function."""
        return self.app.name if self.app is not None else ""

    @property
    def function_name(self) -> str:
        """The called function's name."""
        return function_name(self.function)

    @property
    def class_name(self) -> str:
        """The app's class name, or "" for a plain function."""
        return type(self.app).__name__ if self.app is not None else ""

    def execute(self) -> Any:
        """Call the function with the resolved args (or the raw args if none were resolved).

        An app method's ``self`` among them (ARE's captured args carry it) is the app the
        bound function already has, so it is not passed again.
        """
        args = self.resolved_args or self.args
        if "self" in args and getattr(self.function, "__self__", None) is not None:
            args = {name: value for name, value in args.items() if name != "self"}
        return self.function(**args)


@dataclass(eq=False, slots=True)
class ConditionCheckAction:
    """The predicate of a condition check event: ``function(env) -> bool``."""

    function: Callable[[AbstractEnvironment], bool]
    action_id: str = ""

    def __post_init__(self) -> None:
        if not self.action_id:
            self.action_id = f"condition.{self.function_name}-{new_id()}"

    @property
    def app_name(self) -> str:
        """Conditions belong to no app."""
        return ""

    @property
    def function_name(self) -> str:
        """The predicate's name."""
        return function_name(self.function)

    @property
    def args(self) -> dict[str, Any]:
        """Conditions take only the environment."""
        return {}

    def execute(self, env: AbstractEnvironment) -> bool:
        """Evaluate the predicate against ``env``."""
        return bool(self.function(env))


@dataclass(eq=False, slots=True)
class ActionDescription:
    """A serialisable description of an oracle's expected call: app, function and args."""

    app: str
    function: str
    args: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class EventMetadata:
    """What happened when an event's action ran: return value or exception."""

    return_value: Any = None
    exception: str | None = None
    exception_stack_trace: str | None = None
    completed: bool = True
