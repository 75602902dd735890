"""Sinks: where the runner streams an episode's completed events as they happen.

A sink is either an object with ``on_event(episode_id, event)`` (and optionally
``on_episode_end(episode_id, result)``) or a plain callable ``(episode_id, event)``. This
lets a storage layer stream events (e.g. to a Redis stream) without ``social`` importing
it. Sinks run synchronously inside the episode; an exception from a sink is not an agent
failure and propagates out of the runner.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

from sotopia_are.simulation.types import CompletedEvent

if TYPE_CHECKING:
    from .result import EpisodeResult

__all__ = ["EpisodeSink", "EventCallback", "Sink", "sink_callbacks"]

EventCallback: TypeAlias = Callable[[str, CompletedEvent], None]
"""A plain callable sink: called with the episode id and each completed event."""


@runtime_checkable
class EpisodeSink(Protocol):
    """A sink object; ``on_episode_end`` is optional (looked up with ``getattr``)."""

    def on_event(self, episode_id: str, event: CompletedEvent) -> None: ...


Sink: TypeAlias = EpisodeSink | EventCallback


def sink_callbacks(
    sinks: tuple[Sink, ...],
) -> tuple[list[EventCallback], list[Callable[[str, EpisodeResult], None]]]:
    """The per-event and end-of-episode callbacks of ``sinks``; TypeError for a non-sink."""
    on_event: list[EventCallback] = []
    on_end: list[Callable[[str, EpisodeResult], None]] = []
    for sink in sinks:
        if isinstance(sink, EpisodeSink):
            on_event.append(sink.on_event)
            end = getattr(sink, "on_episode_end", None)
            if end is not None:
                on_end.append(end)
        elif callable(sink):
            on_event.append(sink)
        else:
            raise TypeError(f"{sink!r} is not a sink: give a callable or an object with on_event")
    return on_event, on_end
