"""The ``make_event`` of an imported oracle event: a plain, comparable callable."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sotopia_are.simulation.ids import IdSource
from sotopia_are.simulation.types import (
    AbstractEnvironment,
    AbstractEvent,
    Action,
    Event,
    EventType,
    OperationType,
)

__all__ = ["OracleCall", "default_operation_type"]


@dataclass(frozen=True)
class OracleCall:
    """The ``make_event`` of an imported oracle: the expected call on the running env's app.

    Every run makes the same action id: ``action_id`` as the file gave it, or, when that
    is ``""`` (what ARE writes), one derived from the oracle's event id. ``action_id`` is
    kept as given so that exporting writes back what was imported.
    """

    event_id: str
    event_type: EventType
    app_name: str
    function_name: str
    args: dict[str, Any]
    action_id: str

    def __call__(self, env: AbstractEnvironment) -> AbstractEvent:
        app = env.get_app(self.app_name)
        function = getattr(app, self.function_name)
        return Event(
            event_type=self.event_type,
            event_id=self.event_id,
            action=Action(
                function=function,
                args=dict(self.args),
                app=app,
                action_id=self.action_id
                or f"{self.app_name}.{self.function_name}-"
                + IdSource(f"oracle:{self.event_id}").next(),
                operation_type=default_operation_type(function),
            ),
        )


def default_operation_type(function: Callable[..., Any]) -> OperationType:
    """The operation type an ``event_registered`` method declares (READ otherwise)."""
    declared = getattr(function, "__operation_type__", OperationType.READ)
    return declared if isinstance(declared, OperationType) else OperationType.READ
