"""Sinks: where the runner streams an episode's completed events as they happen.

A sink is either an object with ``on_event(episode_id, event)`` (and optionally
``on_episode_start(episode_id, spec)``, called before the episode's first event, and
``on_episode_end(episode_id, result)``) or a plain callable ``(episode_id, event)``. This
lets a storage layer stream events (e.g. to a Redis stream) without ``social`` importing
it. Sinks run synchronously inside the episode; an exception from a sink is not an agent
failure and propagates out of the runner.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeAlias, runtime_checkable

from sotopia_are.simulation.types import CompletedEvent

if TYPE_CHECKING:
    from .result import EpisodeResult
    from .spec import EpisodeSpec

__all__ = ["EpisodeSink", "EventCallback", "Sink", "SinkCallbacks", "sink_callbacks"]

EventCallback: TypeAlias = Callable[[str, CompletedEvent], None]
"""A plain callable sink: called with the episode id and each completed event."""


@runtime_checkable
class EpisodeSink(Protocol):
    """A sink object; ``on_episode_start`` and ``on_episode_end`` are optional (looked up
    with ``getattr``)."""

    def on_event(self, episode_id: str, event: CompletedEvent) -> None: ...


Sink: TypeAlias = EpisodeSink | EventCallback


class SinkCallbacks(NamedTuple):
    """The callbacks of a list of sinks, by the moment they are called."""

    on_start: list[Callable[[str, EpisodeSpec], None]]
    on_event: list[EventCallback]
    on_end: list[Callable[[str, EpisodeResult], None]]


def sink_callbacks(sinks: tuple[Sink, ...]) -> SinkCallbacks:
    """The start, per-event and end-of-episode callbacks of ``sinks``; TypeError for a
    non-sink."""
    callbacks = SinkCallbacks([], [], [])
    for sink in sinks:
        # What isinstance(sink, EpisodeSink) checks (an on_event that is not None),
        # without a runtime protocol check's cost in every episode.
        on_event = getattr(sink, "on_event", None)
        if on_event is not None:
            callbacks.on_event.append(on_event)
            start = getattr(sink, "on_episode_start", None)
            if start is not None:
                callbacks.on_start.append(start)
            end = getattr(sink, "on_episode_end", None)
            if end is not None:
                callbacks.on_end.append(end)
        elif callable(sink):
            callbacks.on_event.append(sink)
        else:
            raise TypeError(f"{sink!r} is not a sink: give a callable or an object with on_event")
    return callbacks
