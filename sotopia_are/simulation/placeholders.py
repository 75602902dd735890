"""Argument placeholders: ``{{event_id}}`` and ``{{event_id.key.sub}}`` in an event's args
stand for the return value (or a part of it) of an event that already completed."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from sotopia_are.simulation.actions import Action
from sotopia_are.simulation.event_log import EventLog
from sotopia_are.simulation.events import CompletedEvent, Event

__all__ = ["has_placeholder", "resolve_arg_placeholders", "resolve_in_place"]

_PLACEHOLDER = re.compile(r"\{\{\s*([^}.\s]+)((?:\.[^}.\s]+)*)\s*\}\}")


def has_placeholder(args: dict[str, Any]) -> bool:
    """Whether any string value of ``args`` holds a placeholder."""
    # A plain loop: this runs once per event, and a generator costs more than the check.
    for value in args.values():  # noqa: SIM110
        if type(value) is str and "{{" in value:
            return True
    return False


def resolve_arg_placeholders(event: Event, log: EventLog) -> Event:
    """``event`` with its args' placeholders replaced by return values from ``log`` (a
    copy; ``event`` itself if it has none). A whole-string placeholder keeps the value's
    type; embedded ones are formatted into the string. KeyError if a referenced event has
    not completed."""
    action = event.action
    if action is None or not has_placeholder(action.args):
        return event
    resolved = {name: _resolve_value(value, log) for name, value in action.args.items()}
    return Event(
        event_type=event.event_type,
        event_time=event.event_time,
        event_relative_time=event.event_relative_time,
        event_id=event.event_id,
        dependencies=event.dependencies,
        action=Action(
            function=action.function,
            args=action.args,
            resolved_args=resolved,
            app=action.app,
            action_id=action.action_id,
            operation_type=action.operation_type,
            tool_metadata=action.tool_metadata,
        ),
    )


def _resolve_value(value: Any, log: EventLog) -> Any:
    if not isinstance(value, str) or "{{" not in value:
        return value
    whole = _PLACEHOLDER.fullmatch(value)
    if whole is not None:
        return _lookup(log, whole.group(1), whole.group(2))
    return _PLACEHOLDER.sub(lambda m: str(_lookup(log, m.group(1), m.group(2))), value)


def _lookup(log: EventLog, event_id: str, path: str) -> Any:
    completed = log.get(event_id)
    if completed is None:
        raise KeyError(f"placeholder refers to event {event_id!r}, which has not completed")
    value = completed.metadata.return_value
    for key in filter(None, path.split(".")):
        value = value[key] if isinstance(value, dict) else getattr(value, key)
    return value


_WHOLE = re.compile(r"^\{\{(.*?)\}\}$")


def resolve_in_place(event: Event, past_events: Iterable[CompletedEvent]) -> Event:
    """ARE's resolution: ``event.action.resolved_args`` (in place) holds every arg, with a
    whole-string placeholder (blanks around it allowed) replaced by the value it names in
    ``past_events``; one naming no past event is kept as written, and a key missing from
    a value stops the resolution there (later args keep their raw values). Returns
    ``event``."""
    action = event.action
    if action is None or action.args is None:
        return event
    by_id = {past.event_id: past for past in past_events}
    for name, value in action.args.items():
        action.resolved_args[name] = value
        match = _WHOLE.match(value.strip()) if isinstance(value, str) else None
        if match is None:
            continue
        event_id, *keys = match.group(1).split(".")
        past = by_id.get(event_id)
        if past is None:
            continue
        resolved = past.metadata.return_value
        for key in keys:
            if not (isinstance(resolved, dict) and key in resolved):
                return event
            resolved = resolved[key]
        action.resolved_args[name] = resolved
    return event
