"""How a completed event is written into an episode's stream, and read back.

Each stream entry holds one field, ``event``: the event as ARE's
``ExportedCompletedEvent`` JSON (typed values, see ``simulation.data_handler``), so the
same bytes come out for the same event and the stored events import back into the
kernel. Completed events that cannot be exported (see ``convert_completed_event``)
raise ``ScenarioExportError`` before anything is written.
"""

from __future__ import annotations

from sotopia_are.simulation.data_handler.exporter import completed_event_json
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.storage.exported import FORM_FIELD, entry_fields, export_form

__all__ = ["EVENT_FIELD", "decode_event", "encode_event", "event_entry"]

EVENT_FIELD = "event"
"""The stream-entry field holding the event's JSON."""


def encode_event(event: CompletedEvent | ExportedCompletedEvent) -> str:
    """``event`` as deterministic JSON text: its ``ExportedCompletedEvent``'s
    ``model_dump_json()``."""
    if isinstance(event, ExportedCompletedEvent):
        return event.model_dump_json()
    return completed_event_json(event)


def event_entry(event: CompletedEvent | ExportedCompletedEvent) -> dict[str, str]:
    """The fields of the stream entry storing ``event``: its JSON (see
    :func:`encode_event`), marked as the export line holds it
    (:func:`~sotopia_are.storage.exported.entry_fields`)."""
    if isinstance(event, ExportedCompletedEvent):
        return entry_fields(EVENT_FIELD, event.model_dump_json(), event)
    # The text is the exact model's model_dump_json() (completed_event_json), the form
    # entry_fields marks, without the model it would need to be shown.
    form = export_form()
    text = completed_event_json(event)
    return {EVENT_FIELD: text} if form is None else {EVENT_FIELD: text, FORM_FIELD: form}


def decode_event(text: str) -> ExportedCompletedEvent:
    """An event written by :func:`encode_event`."""
    return ExportedCompletedEvent.model_validate_json(text)
