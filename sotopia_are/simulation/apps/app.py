"""The base class of apps: named, seeded, stateful tools that an environment hosts."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sotopia_are.simulation.ids import IdSource
from sotopia_are.simulation.time_manager import TimeManager

if TYPE_CHECKING:
    from sotopia_are.simulation.types import CompletedEvent

__all__ = ["App", "derive_seed"]


def derive_seed(seed: int, name: str) -> int:
    """A 64-bit seed from ``seed`` and ``name``, the same in every process (no ``hash()``)."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class App:
    """A stateful tool. Methods decorated with ``event_registered`` are its API.

    The environment registers itself through :meth:`register_to_env` and
    :meth:`register_time_manager`; agent calls to decorated methods are then logged there.
    ``rng`` is a ``random.Random`` seeded from the app name and :meth:`set_seed`'s seed.
    """

    def __init__(self, name: str | None = None) -> None:
        self.name = type(self).__name__ if name is None else name
        self.add_event_callbacks: dict[str, Callable[[CompletedEvent], None]] = {}
        self.time_manager = TimeManager(virtual=True)
        self.set_seed(0)

    def set_seed(self, seed: int) -> None:
        """Reseed ``rng`` and the app's event ids from ``seed`` and the app name."""
        self.seed = seed
        self.rng = random.Random(derive_seed(seed, self.name))
        self._ids = IdSource(f"app:{self.name}:{seed}")

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

    def register_time_manager(self, time_manager: TimeManager) -> None:
        """Use the environment's clock for the times of logged calls."""
        self.time_manager = time_manager

    def get_state(self) -> dict[str, Any] | None:
        """A JSON-ready snapshot of the app's state (None: the app has no state)."""
        return None

    def load_state(self, state_dict: dict[str, Any]) -> None:
        """Restore a snapshot made by :meth:`get_state`."""

    def reset(self) -> None:
        """Return to the initial state and reseed ``rng`` with the current seed."""
        self.set_seed(self.seed)
