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
from sotopia_are.storage.exported import entry_fields

__all__ = ["EVENT_FIELD", "decode_event", "encode_event", "event_entry"]

EVENT_FIELD = "event"
"""The stream-entry field holding the event's JSON."""


def encode_event(event: CompletedEvent | ExportedCompletedEvent) -> str:
    """``event`` as deterministic JSON text (a completed event's export is kept for the
    record of its episode, see ``export_and_keep``)."""
    exported = event if isinstance(event, ExportedCompletedEvent) else export_and_keep(event)
    return exported.model_dump_json()


def event_entry(event: CompletedEvent | ExportedCompletedEvent) -> dict[str, str]:
    """The fields of the stream entry storing ``event``: its JSON (see
    :func:`encode_event`), marked as the export line holds it
    (:func:`~sotopia_are.storage.exported.entry_fields`)."""
    exported = event if isinstance(event, ExportedCompletedEvent) else export_and_keep(event)
    return entry_fields(EVENT_FIELD, exported.model_dump_json(), exported)


def decode_event(text: str) -> ExportedCompletedEvent:
    """An event written by :func:`encode_event`."""
    return ExportedCompletedEvent.model_validate_json(text)
