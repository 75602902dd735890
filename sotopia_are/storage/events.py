"""How a completed event is written into an episode's stream, and read back.

Each stream entry holds one field, ``event``: the event as ARE's
``ExportedCompletedEvent`` JSON (typed values, see ``simulation.data_handler``), so the
same bytes come out for the same event and the stored events import back into the
kernel. Completed events that cannot be exported (see ``convert_completed_event``)
raise ``ScenarioExportError`` before anything is written.
"""

from __future__ import annotations

from sotopia_are.simulation.data_handler.exporter import export_and_keep
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.simulation.types import CompletedEvent

__all__ = ["EVENT_FIELD", "decode_event", "encode_event"]

EVENT_FIELD = "event"
"""The stream-entry field holding the event's JSON."""


def encode_event(event: CompletedEvent | ExportedCompletedEvent) -> str:
    """``event`` as deterministic JSON text (a completed event's export is kept for the
    record of its episode, see ``export_and_keep``)."""
    exported = event if isinstance(event, ExportedCompletedEvent) else export_and_keep(event)
    return exported.model_dump_json()


def decode_event(text: str) -> ExportedCompletedEvent:
    """An event written by :func:`encode_event`."""
    return ExportedCompletedEvent.model_validate_json(text)
