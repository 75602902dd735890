"""A scenario read from a JSON file: apps and events already built, plus what the file said.

The importer builds and checks everything before it returns (so a bad file is one error
and nothing is half-imported); this class holds the result. It also keeps the parts of the
file that the kernel has no place for — the metadata, ``context``, ``augmentation`` and
the apps' initial states — so that exporting it again writes them back unchanged.
"""

from dataclasses import dataclass, field
from typing import Any

from sotopia_are.simulation.data_handler.models import (
    ExportedApp,
    ExportedEvent,
    ExportedTraceMetadata,
)
from sotopia_are.simulation.scenarios.scenario import Scenario

__all__ = ["ImportReport", "ScenarioImportedFromJson"]


@dataclass
class ImportReport:
    """What the importer changed or left out; empty lists for a file imported as is.

    - skipped_apps: apps not loaded (``apps_to_skip``/``apps_to_keep`` or unknown classes).
    - dropped_event_ids: scheduled events left out because they call a skipped app or
      depend on a dropped event.
    - dropped_completed_event_ids: completed events left out for the same reasons.
    - normalisations: how a flatter, hand-written document was read (see ``reader``).
    - unknown_apps: apps whose classes this installation does not have, kept as the file
      wrote them (exported back unchanged) but not built; their events are dropped, their
      completed events kept as records (``CompletedEvent.from_dict``).
    """

    skipped_apps: list[str] = field(default_factory=list)
    unknown_apps: list[str] = field(default_factory=list)
    dropped_event_ids: list[str] = field(default_factory=list)
    dropped_completed_event_ids: list[str] = field(default_factory=list)
    normalisations: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line per thing left out or changed, for logs and the CLI ("" if none)."""
        lines: list[str] = []
        if self.unknown_apps:
            lines.append("apps of unknown classes (kept, not run): " + ", ".join(self.unknown_apps))
        if self.skipped_apps:
            lines.append("skipped apps: " + ", ".join(self.skipped_apps))
        if self.dropped_event_ids:
            lines.append("dropped events: " + ", ".join(self.dropped_event_ids))
        if self.dropped_completed_event_ids:
            lines.append("dropped completed events: " + ", ".join(self.dropped_completed_event_ids))
        lines.extend(f"normalised {note}" for note in self.normalisations)
        return "\n".join(lines)


class ScenarioImportedFromJson(Scenario):
    """A :class:`Scenario` whose apps and events come from a scenario file.

    ``initialize`` keeps the imported apps and events (and seeds the apps, as for any
    scenario). ``soft_reset`` restores every app to the state the file gave it.
    """

    scenario_id: str = "scenario_imported_from_json"
    run_number: int | None = None
    metadata: ExportedTraceMetadata | None = None
    context: str | None = None
    augmentation: dict[str, Any] | None = None
    app_records: tuple[ExportedApp, ...] = ()
    import_report: ImportReport | None = None
    # ARE's fields, as its importer sets them: the file's apps and events as written (all
    # of them; ``apps`` and ``events`` are what was built), the app choice, and the
    # definition's augmentation and exception flags.
    serialized_apps: list[ExportedApp] | None = None
    serialized_events: list[ExportedEvent] | None = None
    apps_to_skip: list[str] | None = None
    apps_to_keep: list[str] | None = None
    config: str | None = None
    has_a2a_augmentation: bool = False
    has_tool_augmentation: bool = False
    has_env_events_augmentation: bool = False
    has_exception: bool = False
    exception_type: str | None = None
    exception_message: str | None = None

    def soft_reset(self) -> None:
        """Reload each app's imported state, then reset and reseed it."""
        states = {record.name: record.app_state for record in self.app_records}
        for app in self.apps or []:
            state = states.get(app.name)
            app.reset()
            if state is not None:
                app.load_state(state)
