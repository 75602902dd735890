"""`EnvironmentQueries`: what ARE's ``Environment`` answers about itself — its latest
event, log and queue sizes, apps and their tools — kept apart from the kernel's core, which
only runs events. Read-only: nothing here changes the environment."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sotopia_are.simulation.tool_utils import AppTool

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from sotopia_are.simulation.apps.app import App
    from sotopia_are.simulation.environment_config import EnvironmentConfig
    from sotopia_are.simulation.event_log import EventLog
    from sotopia_are.simulation.event_queue import EventQueue
    from sotopia_are.simulation.events import CompletedEvent

__all__ = ["EnvironmentQueries"]


class EnvironmentQueries:
    """ARE's questions to an environment, answered from its apps, log and queue."""

    apps: dict[str, App]
    config: EnvironmentConfig
    event_queue: EventQueue
    _event_log: EventLog
    _lock: AbstractContextManager[object]

    def get_latest_event(self) -> CompletedEvent | None:
        """The last completed event, if any."""
        with self._lock:
            return self._event_log[-1] if len(self._event_log) else None

    def get_event_log_size(self) -> int:
        """How many events completed."""
        return len(self._event_log)

    def get_event_queue_length(self) -> int:
        """How many events are queued."""
        return len(self.event_queue)

    def has_app(self, app_name: str) -> bool:
        """Whether an app ``app_name`` is registered."""
        return app_name in self.apps

    @property
    def time_increment_in_seconds(self) -> int:
        """Seconds per tick (the configuration's)."""
        return self.config.time_increment_in_seconds

    def get_tools_by_app(self) -> dict[str, list[AppTool]]:
        """The agent's tools of each registered app, by app name."""
        return {name: app.get_tools() for name, app in self.apps.items()}

    def get_tools(self) -> list[AppTool]:
        """The agent's tools of every registered app."""
        return [tool for tools in self.get_tools_by_app().values() for tool in tools]

    def get_user_tools_by_app(self) -> dict[str, list[AppTool]]:
        """The user's tools of each registered app, by app name."""
        return {name: app.get_user_tools() for name, app in self.apps.items()}

    def get_user_tools(self) -> list[AppTool]:
        """The user's tools of every registered app."""
        return [tool for tools in self.get_user_tools_by_app().values() for tool in tools]
