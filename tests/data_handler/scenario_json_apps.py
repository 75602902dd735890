"""Test-only apps and check functions for the scenario JSON tests.

The ``ARE_*`` classes stand in for ARE's own apps, by the names ARE's exports use, with
just the methods those files call. ``Echo`` returns what it is given, so return values of
every JSON type can be checked. The functions are module level so that condition and
validation events that use them can be exported by reference.
"""

from typing import Any

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.apps.registry import AppRegistry
from sotopia_are.simulation.types import AbstractEnvironment, OperationType, event_registered

__all__ = [
    "Echo",
    "EmailClientApp",
    "always_true",
    "are_registry",
    "echo_was_called",
    "make_test_registry",
    "never_true",
]


class _StatefulApp(App):
    """An app whose state is a JSON dict, loaded and dumped as is."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(name)
        self.state: dict[str, Any] = {}

    def get_state(self) -> dict[str, Any] | None:
        return dict(self.state)

    def load_state(self, state_dict: dict[str, Any]) -> None:
        self.state = dict(state_dict)


class AgentUserInterface(_StatefulApp):
    @event_registered(operation_type=OperationType.WRITE)
    def send_message_to_agent(
        self,
        content: str = "",
        attachments: list[str] | None = None,
        base64_utf8_encoded_attachment_contents: list[dict[str, Any]] | None = None,
    ) -> str:
        self.state.setdefault("messages", []).append({"to": "agent", "content": content})
        return f"message-{len(self.state['messages'])}"

    @event_registered(operation_type=OperationType.WRITE)
    def send_message_to_user(self, content: str = "") -> None:
        self.state.setdefault("messages", []).append({"to": "user", "content": content})


class SystemApp(App):
    @event_registered()
    def get_current_time(self) -> dict[str, Any]:
        now = self.time_manager.time()
        return {"current_timestamp": now}


class CalendarApp(_StatefulApp):
    pass


class ContactsApp(_StatefulApp):
    pass


class SandboxLocalFileSystem(_StatefulApp):
    pass


class MessagingApp(_StatefulApp):
    @event_registered(operation_type=OperationType.WRITE)
    def add_message(
        self, conversation_id: str, sender: str, content: str, timestamp: float | None = None
    ) -> None:
        self.state.setdefault("log", []).append([conversation_id, sender, content])


class EmailClientApp(_StatefulApp):
    @event_registered(operation_type=OperationType.WRITE)
    def send_email_to_user(self, email: str) -> str:
        self.state.setdefault("received", []).append(str(email))
        return "greg_email"

    @event_registered(operation_type=OperationType.WRITE)
    def forward_email(
        self, email_id: str, recipients: list[str], folder_name: str = "INBOX"
    ) -> str:
        return f"forwarded-{email_id}-to-{len(recipients)}"


def are_registry() -> AppRegistry:
    """A registry with the stand-ins for every app ARE's two exports use."""
    registry = AppRegistry()
    for app_class in (
        AgentUserInterface,
        SystemApp,
        CalendarApp,
        ContactsApp,
        SandboxLocalFileSystem,
        MessagingApp,
        EmailClientApp,
    ):
        registry.register(app_class)
    return registry


class Echo(_StatefulApp):
    """Returns its first non-None argument; records every call in its state."""

    @event_registered(operation_type=OperationType.WRITE)
    def echo(self, a: Any = None, b: Any = None, c: Any = None, d: Any = None) -> Any:
        self.state["calls"] = int(self.state.get("calls", 0)) + 1
        for value in (a, b, c, d):
            if value is not None:
                return value
        return None


def make_test_registry() -> AppRegistry:
    """A registry knowing :class:`Echo` (and the ARE stand-ins)."""
    registry = are_registry()
    registry.register(Echo)
    return registry


def always_true(env: AbstractEnvironment) -> bool:
    return True


def never_true(env: AbstractEnvironment) -> bool:
    return False


def echo_was_called(env: AbstractEnvironment) -> bool:
    return any(event.function_name() == "echo" for event in env.event_log)
