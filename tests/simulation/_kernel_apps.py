"""Small apps shared by the kernel tests."""

from __future__ import annotations

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.types import EventType, OperationType, event_registered


class CounterApp(App):
    """A counter whose write calls nest a read call (to test transactional logging)."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(name)
        self.total = 0

    @event_registered(operation_type=OperationType.WRITE)
    def add(self, amount: int) -> int:
        self.total += amount
        return self.read()

    @event_registered()
    def read(self) -> int:
        return self.total

    @event_registered(operation_type=OperationType.WRITE)
    def fail(self, reason: str) -> None:
        raise RuntimeError(reason)

    @event_registered(operation_type=OperationType.WRITE)
    def roll(self) -> int:
        return self.rng.randint(0, 10**9)

    def get_state(self) -> dict[str, int]:
        return {"total": self.total}

    def load_state(self, state_dict: dict[str, int]) -> None:
        self.total = state_dict["total"]

    def reset(self) -> None:
        super().reset()
        self.total = 0


class AgentUserInterface(App):
    """Messages between the user and the agent."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    @event_registered(operation_type=OperationType.WRITE, event_type=EventType.USER)
    def send_message_to_agent(self, content: str) -> str:
        self.messages.append(content)
        return content
