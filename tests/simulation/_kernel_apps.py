"""Small apps shared by the kernel tests."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass
class Reminder:
    title: str
    due: float
    time_notified: float | None = None

    @property
    def already_notified(self) -> bool:
        return self.time_notified is not None

    def __str__(self) -> str:
        return f"Reminder: {self.title}"


class ReminderApp(App):
    """Reminders with due times, asked for the due ones as ARE's ``ReminderApp`` is."""

    def __init__(self, reminders: list[Reminder]) -> None:
        super().__init__("Todo")
        self.reminders = reminders

    @event_registered()
    def get_due_reminders(self) -> list[Reminder]:
        now = self.time_manager.time()
        return [reminder for reminder in self.reminders if reminder.due <= now]
