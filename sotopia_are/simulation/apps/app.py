"""The base class of apps: named, seeded, stateful tools that an environment hosts."""

from __future__ import annotations

import enum
import hashlib
import inspect
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sotopia_are.simulation.ids import IdSource
from sotopia_are.simulation.time_manager import TimeManager
from sotopia_are.simulation.tool_utils import AppTool, ToolAttributeName, build_tool

if TYPE_CHECKING:
    from sotopia_are.simulation.types import CompletedEvent

__all__ = ["App", "Protocol", "ToolType", "derive_seed"]


class Protocol(enum.Enum):
    """A service one app offers others (an email app stores attachments on a file system)."""

    FILE_SYSTEM = "FILE_SYSTEM"


class ToolType(enum.Enum):
    """Who a tool is for: the agent (APP), the user, the environment, or data loading."""

    APP = enum.auto()
    USER = enum.auto()
    ENV = enum.auto()
    DATA = enum.auto()


_TOOL_ATTRIBUTE = {
    ToolType.APP: ToolAttributeName.APP,
    ToolType.USER: ToolAttributeName.USER,
    ToolType.ENV: ToolAttributeName.ENV,
    ToolType.DATA: ToolAttributeName.DATA,
}


def derive_seed(seed: int, name: str) -> int:
    """A 64-bit seed from ``seed`` and ``name``, the same in every process (no ``hash()``)."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class App:
    """A stateful tool. Methods decorated with ``event_registered`` are its API.

    The environment registers itself through :meth:`register_to_env` and
    :meth:`register_time_manager`; agent calls to decorated methods are then logged there.
    ``rng`` is a ``random.Random`` seeded from the app name and :meth:`set_seed`'s seed.

    As in ARE, a subclass may pass its own constructor arguments on
    (``super().__init__(name, *args, **kwargs)``): :meth:`reset` then rebuilds the app
    from them. Methods marked with ``@app_tool()`` (and ``@user_tool()``, ``@env_tool()``,
    ``@data_tool()``) are its tools (:meth:`get_tools`).
    """

    def __init__(self, name: str | None = None, *args: Any, **kwargs: Any) -> None:
        self.name = type(self).__name__ if name is None else name
        self._initial_args = (name, *args)
        self._initial_kwargs = dict(kwargs)
        self.add_event_callbacks: dict[str, Callable[[CompletedEvent], None]] = {}
        self.time_manager = TimeManager(virtual=True)
        self.is_state_modified = False
        self.failure_probability: float | None = None
        self._tool_registries: dict[ToolType, list[AppTool]] = {}
        self.set_seed(0)

    def set_seed(self, seed: int) -> None:
        """Reseed ``rng`` and the app's event ids from ``seed`` and the app name."""
        self.seed = seed
        # The generator is made when first used (see rng): seeding a Mersenne Twister
        # costs more than the rest of making an app, most apps never draw from it, and an
        # app is seeded twice before it runs (when made, and by its scenario).
        self._rng: random.Random | None = None
        self._rng_name = self.name
        self._ids = IdSource(f"app:{self.name}:{seed}")

    @property
    def rng(self) -> random.Random:
        """The app's random generator, seeded from the app name and :meth:`set_seed`'s
        seed as they were when it was set."""
        if self._rng is None:
            self._rng = random.Random(derive_seed(self.seed, self._rng_name))
        return self._rng

    @rng.setter
    def rng(self, generator: random.Random) -> None:
        self._rng = generator

    def next_event_id(self) -> str:
        """A fresh id for an event this app logs (deterministic for a given seed)."""
        return self._ids.next()

    def app_name(self) -> str:
        """The name the app is registered under."""
        return self.name

    def register_to_env(self, key: str, add_event: Callable[[CompletedEvent], None]) -> None:
        """Send each logged call of this app to ``add_event`` (``key`` names the listener)."""
        self.add_event_callbacks[key] = add_event

    def unregister_from_env(self, key: str) -> None:
        """Stop sending logged calls to the listener ``key``."""
        self.add_event_callbacks.pop(key, None)

    def add_event(self, event: CompletedEvent) -> None:
        """Send ``event`` to every registered listener."""
        for callback in list(self.add_event_callbacks.values()):
            callback(event)

    def register_time_manager(self, time_manager: TimeManager) -> None:
        """Use the environment's clock for the times of logged calls."""
        self.time_manager = time_manager

    def get_state(self) -> dict[str, Any] | None:
        """A JSON-ready snapshot of the app's state (None: the app has no state)."""
        return None

    def load_state(self, state_dict: dict[str, Any]) -> None:
        """Restore a snapshot made by :meth:`get_state`."""

    def reset(self) -> None:
        """Return to the initial state and reseed ``rng`` with the current seed.

        An app built with constructor arguments passed on to ``App.__init__`` is rebuilt
        from them (ARE's reset); either way it stays registered with its environment and
        keeps its clock and seed.
        """
        seed = self.seed
        if len(self._initial_args) > 1 or self._initial_kwargs:
            callbacks, clock = self.add_event_callbacks, self.time_manager
            type(self).__init__(self, *self._initial_args, **self._initial_kwargs)
            self.add_event_callbacks, self.time_manager = callbacks, clock
        self.set_seed(seed)

    # ------------------------------------------------------------------ protocols

    def get_implemented_protocols(self) -> list[Protocol]:
        """The protocols this app offers other apps (none by default)."""
        return []

    def connect_to_protocols(self, protocols: dict[Protocol, Any]) -> None:
        """Use the apps offering ``protocols`` (called once every app is registered)."""

    def pause_env(self) -> None:
        """Pause the hosting environment (set by environments that support it)."""

    def resume_env(self) -> None:
        """Resume the hosting environment (set by environments that support it)."""

    # ---------------------------------------------------------------------- tools

    def set_failure_probability(self, failure_probability: float) -> None:
        """Make the agent's tools fail at random at this rate (tools are rebuilt)."""
        self.failure_probability = failure_probability
        self._tool_registries.clear()

    def get_tools_with_attribute(
        self, attribute: ToolAttributeName, tool_type: ToolType
    ) -> list[AppTool]:
        """The tools of the methods marked with ``attribute``, in definition order, a
        subclass's override first; methods set on the instance come last."""
        seen: set[str] = set()
        tools: list[AppTool] = []
        probability = self.failure_probability if tool_type is ToolType.APP else None
        namespaces = [vars(cls) for cls in inspect.getmro(type(self))] + [vars(self)]
        for namespace in namespaces:
            for name, value in list(namespace.items()):
                if name in seen or not getattr(value, attribute.value, False):
                    continue
                seen.add(name)
                if not getattr(value, "__doc__", None):
                    value.__doc__ = _inherited_doc(type(self), name)
                tools.append(build_tool(self, value, probability))
        return tools

    def _tools(self, tool_type: ToolType) -> list[AppTool]:
        tools = self._tool_registries.get(tool_type)
        if tools is None:
            tools = self.get_tools_with_attribute(_TOOL_ATTRIBUTE[tool_type], tool_type)
            self._tool_registries[tool_type] = tools
        return tools

    def get_tools(self) -> list[AppTool]:
        """The agent's tools of this app (built once)."""
        return self._tools(ToolType.APP)

    def get_user_tools(self) -> list[AppTool]:
        """The user's tools of this app."""
        return self._tools(ToolType.USER)

    def get_env_tools(self) -> list[AppTool]:
        """The environment's tools of this app."""
        return self._tools(ToolType.ENV)

    def get_data_tools(self) -> list[AppTool]:
        """The data-loading tools of this app."""
        return self._tools(ToolType.DATA)

    def get_tool(self, tool_name: str) -> AppTool | None:
        """The tool ``tool_name`` (the method name) of any kind, or None."""
        for tool_type in ToolType:
            for tool in self._tools(tool_type):
                if tool.name == f"{self.name}__{tool_name}":
                    return tool
        return None


def _inherited_doc(cls: type, name: str) -> str | None:
    """The docstring of ``name`` on the nearest base class that documents it."""
    for base in inspect.getmro(cls)[1:]:
        doc = getattr(getattr(base, name, None), "__doc__", None)
        if doc:
            return str(doc)
    return None
