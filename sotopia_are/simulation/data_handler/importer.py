"""Importing a scenario file into kernel objects: apps, events, hints and completed events.

Everything is checked and built before anything is returned, so a bad file gives exactly
one :class:`ScenarioFormatError` naming the JSON path of the problem and nothing is
half-imported. Checked beyond the shape (see :mod:`.reader`): unique event ids,
dependencies on known events, no dependency cycles, known event classes and types, app
classes that resolve (see :mod:`sotopia_are.simulation.apps.registry`), functions the apps
have, args the functions accept, and values that decode to their declared types.

Nothing is imported while reading a file: app classes named by a dotted path and the
functions of condition and validation events resolve only into the modules the importer
was given (``modules``) and those of its registry's app classes, already imported.

An app whose class this installation does not have is kept as ARE keeps it: as the file
wrote it (``scenario.serialized_apps``, written back on export), not built; the events
calling it are dropped and its completed events kept as records without live objects
(``CompletedEvent.from_dict``). ``strict_apps=True`` refuses such a file instead, naming
the classes. Apps can be left out with ``apps_to_skip`` / ``apps_to_keep`` (by app name)
or, for unknown classes, ``skip_unknown_apps=True`` (not written back on export). Events calling a
left-out app, and events depending on those, are dropped. An event may call an app the
file does not list in ``apps`` (ARE's own documentation example does): that is an error
unless the app is left out by ``apps_to_skip`` / ``apps_to_keep``, or ``lenient=True``
(or ``skip_unknown_apps=True``) leaves out every such app. What was left out is logged as
a warning and listed on ``scenario.import_report``.
"""

import inspect
import logging
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.apps.registry import (
    AppRegistry,
    UnknownAppClassError,
    default_app_registry,
)
from sotopia_are.simulation.checks import check_base_id
from sotopia_are.simulation.ids import id_namespace
from sotopia_are.simulation.scenarios.scenario_imported_from_json import (
    BenchmarkScenarioImportedFromJson,
    ImportReport,
    ScenarioImportedFromJson,
)
from sotopia_are.simulation.types import (
    AbstractEvent,
    Action,
    ActionDescription,
    CapabilityTag,
    CompletedEvent,
    CompletedOracleEvent,
    ConditionCheckAction,
    ConditionCheckEvent,
    Event,
    EventMetadata,
    EventTimeComparator,
    EventType,
    Hint,
    HintType,
    OperationType,
    OracleEvent,
    StopEvent,
    ValidationEvent,
)

from .callables import resolve_callable_reference
from .errors import JsonPath, ScenarioFormatError
from .models import (
    ExportedAction,
    ExportedActionArg,
    ExportedApp,
    ExportedCompletedEvent,
    ExportedEvent,
    ExportedOracleEvent,
    ExportedTrace,
)
from .oracle_call import OracleCall, default_operation_type
from .reader import SUPPORTED_VERSIONS, read_trace
from .return_values import decode_return_value
from .values import decode_value

__all__ = ["JsonScenarioImporter"]

logger = logging.getLogger(__name__)

ScenarioT = TypeVar("ScenarioT", bound=ScenarioImportedFromJson)

EVENT_CLASSES = ("Event", "OracleEvent", "ConditionCheckEvent", "ValidationEvent", "StopEvent")
COMPLETED_EVENT_CLASSES = ("CompletedEvent", "CompletedOracleEvent")
# ARE's documentation names hint types in lower case; the kernel's enum is upper case.
_HINT_ALIASES = {"task": HintType.TASK_HINT, "environment": HintType.ENVIRONMENT_HINT}


@dataclass(frozen=True)
class _AppChoice:
    """Which apps an import leaves out, and what it does with apps it does not have."""

    skip: Sequence[str] | None = None
    keep: Sequence[str] | None = None
    skip_unknown: bool = False
    """Leave out apps whose classes do not resolve, and apps the file does not list."""
    lenient: bool = False
    """Leave out apps that events call but the file does not list."""
    strict: bool = False
    """Refuse apps whose classes do not resolve (instead of keeping them unbuilt)."""

    def leaves_out(self, name: str) -> bool:
        """Whether ``apps_to_skip`` / ``apps_to_keep`` leave out the app ``name``."""
        return bool(self.skip and name in self.skip) or (
            self.keep is not None and name not in self.keep
        )


class JsonScenarioImporter:
    """Reads scenario files (ARE's ``ExportedTrace`` JSON) into runnable scenarios.

    ``app_registry`` says which App class each ``class_name`` means (default:
    :data:`~sotopia_are.simulation.apps.registry.default_app_registry`). ``modules`` are
    the modules, besides those of the registry's classes, that a file's dotted app class
    paths and function references may point into; a file names no other module.
    """

    SUPPORTED_VERSIONS = SUPPORTED_VERSIONS

    def __init__(
        self, app_registry: AppRegistry | None = None, modules: Iterable[ModuleType] = ()
    ) -> None:
        self.app_registry = default_app_registry if app_registry is None else app_registry
        self.modules = tuple(modules)

    def allowed_modules(self) -> frozenset[str]:
        """The names of the modules a file's references may resolve into."""
        return frozenset(
            [module.__name__ for module in self.modules]
            + [self.app_registry.resolve(name).__module__ for name in self.app_registry]
        )

    @staticmethod
    def map_action(
        action_data: dict[str, Any], app_name_to_class: dict[str, str]
    ) -> dict[str, Any]:
        """ARE's helper: an exported action (a dict) as ``CompletedEvent.from_dict`` reads it.

        Args decode to their declared types (``ValueError`` for a malformed one); the
        class name is the app's class from ``app_name_to_class`` (the app's own name when
        it is not there), ``"ConditionCheckAction"`` for an action without an app.
        """
        app = action_data.get("app")
        return {
            "action_id": action_data["action_id"],
            "class_name": (
                "ConditionCheckAction" if app is None else app_name_to_class.get(app, app)
            ),
            "args": {
                arg["name"]: decode_value(arg.get("value"), arg.get("value_type"))
                for arg in action_data.get("args") or []
            },
            "function_name": action_data["function"],
            "operation_type": action_data.get("operation_type"),
        }

    @staticmethod
    def map_event_metadata(metadata_data: dict[str, Any]) -> dict[str, Any]:
        """ARE's helper: an exported event's metadata (a dict), its fields as written."""
        return {
            name: metadata_data.get(name)
            for name in ("exception", "exception_stack_trace", "return_value", "return_value_type")
        }

    @staticmethod
    def map_event(input_json: dict[str, Any], app_name_to_class: dict[str, str]) -> dict[str, Any]:
        """ARE's helper: an exported (completed) event (a dict) as ``CompletedEvent.from_dict``
        reads it; ``metadata`` and ``action`` only when the event has them."""
        mapped: dict[str, Any] = {
            name: input_json[name]
            for name in ("event_id", "event_time", "event_type", "dependencies")
        }
        if input_json.get("metadata") is not None:
            mapped["metadata"] = JsonScenarioImporter.map_event_metadata(input_json["metadata"])
        if input_json.get("action") is not None:
            mapped["action"] = JsonScenarioImporter.map_action(
                input_json["action"], app_name_to_class
            )
        return mapped

    def import_from_json(
        self,
        json_str: str | bytes,
        apps_to_skip: Sequence[str] | None = None,
        apps_to_keep: Sequence[str] | None = None,
        load_completed_events: bool = True,
        *,
        skip_unknown_apps: bool = False,
        lenient: bool = False,
        strict_apps: bool = False,
    ) -> tuple[ScenarioImportedFromJson, list[CompletedEvent], list[str]]:
        """Import a scenario file.

        Returns the scenario (ready for ``Environment.run``), its completed events (empty
        unless ``load_completed_events``) and its world logs (the serialised log lines, as
        stored). Raises :class:`ScenarioFormatError` for any problem in the file. With
        ``lenient``, events calling an app that the file's ``apps`` do not list are dropped
        (with the warning of a skipped app's events) instead. With ``strict_apps``, an app
        class this installation does not have is an error (by default it is kept unbuilt,
        see the module's documentation).
        """
        return self._import(
            ScenarioImportedFromJson,
            json_str,
            _AppChoice(apps_to_skip, apps_to_keep, skip_unknown_apps, lenient, strict_apps),
            load_completed_events,
        )

    def import_from_json_to_benchmark(
        self,
        json_str: str | bytes,
        apps_to_skip: Sequence[str] | None = None,
        apps_to_keep: Sequence[str] | None = None,
        load_completed_events: bool = True,
        *,
        skip_unknown_apps: bool = False,
        lenient: bool = False,
        strict_apps: bool = False,
    ) -> tuple[BenchmarkScenarioImportedFromJson, list[CompletedEvent], list[str]]:
        """As :meth:`import_from_json`, as a benchmark scenario carrying ``hf_metadata``.

        Apps missing from the file are not fetched from the Hugging Face Hub (the kernel
        does no network I/O); such a file imports without apps.
        """
        scenario, completed, world_logs = self._import(
            BenchmarkScenarioImportedFromJson,
            json_str,
            _AppChoice(apps_to_skip, apps_to_keep, skip_unknown_apps, lenient, strict_apps),
            load_completed_events,
        )
        assert scenario.metadata is not None  # always set by _import
        scenario.hf_metadata = scenario.metadata.definition.hf_metadata
        return scenario, completed, world_logs

    def _import(
        self,
        scenario_class: type[ScenarioT],
        json_str: str | bytes,
        choice: _AppChoice,
        load_completed_events: bool,
    ) -> tuple[ScenarioT, list[CompletedEvent], list[str]]:
        trace, notes = read_trace(json_str)
        definition = trace.metadata.definition
        seed = 0 if definition.seed is None else definition.seed
        builder = _Builder(
            trace,
            self.app_registry,
            choice,
            ImportReport(normalisations=notes),
            self.allowed_modules(),
        )
        # Ids the file leaves empty are generated; the namespace makes them reproducible.
        with id_namespace(f"import:{definition.scenario_id}:{seed}"):
            builder.check_event_graph()
            builder.build_apps()
            events = builder.build_events()
            completed = builder.build_completed_events()
        hints = builder.build_hints()
        report = builder.report
        scenario = scenario_class(
            scenario_id=definition.scenario_id,
            seed=seed,
            start_time=definition.start_time,
            duration=definition.duration,
            time_increment_in_seconds=definition.time_increment_in_seconds or 1,
            tags=tuple(_tag(tag) for tag in definition.tags or ()),
            run_number=definition.run_number,
            metadata=trace.metadata,
            context=trace.context,
            augmentation=trace.augmentation,
            app_records=tuple(builder.kept_app_records),
            import_report=report,
            serialized_apps=list(trace.apps),
            serialized_events=list(trace.events),
            apps_to_skip=None if choice.skip is None else list(choice.skip),
            apps_to_keep=None if choice.keep is None else list(choice.keep),
            config=definition.config,
            has_a2a_augmentation=definition.has_a2a_augmentation,
            has_tool_augmentation=definition.has_tool_augmentation,
            has_env_events_augmentation=definition.has_env_events_augmentation,
            has_exception=definition.has_exception,
            exception_type=definition.exception_type,
            exception_message=definition.exception_message,
        )
        scenario.apps = list(builder.apps.values())
        scenario.events = events
        scenario.hints = hints
        if report.summary():
            logger.warning(
                "scenario %s was not imported as is:\n%s",
                definition.scenario_id,
                report.summary(),
            )
        return scenario, completed if load_completed_events else [], list(trace.world_logs)


class _Builder:
    """The state of one import; each ``build_*`` raises ScenarioFormatError on a problem."""

    def __init__(
        self,
        trace: ExportedTrace,
        registry: AppRegistry,
        choice: _AppChoice,
        report: ImportReport,
        modules: Collection[str],
    ):
        self.trace = trace
        self.modules = modules
        self.registry = registry
        self.choice = choice
        self.report = report
        self.apps: dict[str, App] = {}
        self.kept_app_records: list[ExportedApp] = []
        self.skipped_apps: set[str] = set()
        self.unknown_apps: set[str] = set()
        self.events_by_id: dict[str, AbstractEvent] = {}
        self.dropped_ids: set[str] = set()
        self.order: list[int] = []

    # ----------------------------------------------------------------- graph

    def check_event_graph(self) -> None:
        """Unique ids, known dependencies, no cycles; sets ``order`` (topological)."""
        events = self.trace.events
        index_of: dict[str, int] = {}
        for index, event in enumerate(events):
            if event.event_id in index_of:
                raise ScenarioFormatError(
                    ["events", index, "event_id"],
                    f"duplicate event id {event.event_id!r} "
                    f"(also events[{index_of[event.event_id]}])",
                )
            index_of[event.event_id] = index
        for index, event in enumerate(events):
            for position, dependency in enumerate(event.dependencies):
                if dependency not in index_of:
                    raise ScenarioFormatError(
                        ["events", index, "dependencies", position],
                        f"unknown event id {dependency!r}",
                    )
        self.order = _topological_order(events, index_of)
        known = set(index_of) | {event.event_id for event in self.trace.completed_events}
        for position, hint in enumerate(self.trace.metadata.definition.hints):
            associated = hint.associated_event_id
            if associated is not None and associated not in known:
                raise ScenarioFormatError(
                    ["metadata", "definition", "hints", position, "associated_event_id"],
                    f"unknown event id {associated!r}",
                )

    # ------------------------------------------------------------------ apps

    def build_apps(self) -> None:
        """Resolve, build and load every app not left out."""
        records = self.trace.apps
        classes: dict[int, type[App]] = {}
        unknown: list[tuple[int, str, str]] = []
        seen: dict[str, int] = {}
        for index, record in enumerate(records):
            if record.name in seen:
                raise ScenarioFormatError(
                    ["apps", index, "name"],
                    f"duplicate app name {record.name!r} (also apps[{seen[record.name]}])",
                )
            seen[record.name] = index
            if self.choice.leaves_out(record.name):
                self._skip_app(record.name)
                continue
            class_name = record.class_name or record.name
            try:
                self._check_class_module(class_name)
                classes[index] = self.registry.resolve(class_name)
            except UnknownAppClassError as error:
                unknown.append((index, class_name, str(error)))
        if unknown and self.choice.skip_unknown:
            for index, _, _ in unknown:
                self._skip_app(records[index].name)
        elif unknown and not self.choice.strict:
            for index, _, _ in unknown:
                self.unknown_apps.add(records[index].name)
                self.report.unknown_apps.append(records[index].name)
        elif unknown:
            # A bare name just is not registered; a dotted path says why it did not import.
            names = ", ".join(
                f"{name} (apps[{index}]{': ' + reason if '.' in name or ':' in name else ''})"
                for index, name, reason in unknown
            )
            skip = ", ".join(repr(records[index].name) for index, _, _ in unknown)
            raise ScenarioFormatError(
                ["apps", unknown[0][0], "class_name"],
                f"unknown app classes: {names}. Register them with register_app_class, "
                f"or leave them out with apps_to_skip=[{skip}]",
            )
        for index, record in enumerate(records):
            app_class = classes.get(index)
            if app_class is not None:
                self.apps[record.name] = self._make_app(index, record, app_class)
            if app_class is not None or record.name in self.unknown_apps:
                self.kept_app_records.append(record)

    def _check_class_module(self, class_name: str) -> None:
        """:class:`UnknownAppClassError` for a dotted path into a module not allowed: the
        registry would import it, running whatever it holds."""
        if class_name in self.registry or ("." not in class_name and ":" not in class_name):
            return
        module_name, sep, _ = class_name.partition(":")
        if not sep:
            module_name = class_name.rpartition(".")[0]
        if module_name not in self.modules:
            raise UnknownAppClassError(
                f"module {module_name!r} is not one of the modules loaded for this file; "
                "a scenario file imports nothing: load it with --apps"
            )

    def _skip_app(self, name: str) -> None:
        self.skipped_apps.add(name)
        self.report.skipped_apps.append(name)

    @staticmethod
    def _make_app(index: int, record: ExportedApp, app_class: type[App]) -> App:
        try:
            app = app_class() if record.name == app_class.__name__ else app_class(name=record.name)
        except Exception as error:
            raise ScenarioFormatError(
                ["apps", index, "class_name"],
                f"{app_class.__name__} cannot be built: {type(error).__name__}: {error}",
            ) from None
        if record.app_state is not None:
            try:
                app.load_state(record.app_state)
            except Exception as error:
                raise ScenarioFormatError(
                    ["apps", index, "app_state"],
                    f"{app_class.__name__} rejected this state: {type(error).__name__}: {error}",
                ) from None
        return app

    # ---------------------------------------------------------------- events

    def build_events(self) -> list[AbstractEvent]:
        """Build the scheduled events (file order), wired to their dependencies."""
        events = self.trace.events
        for index in self.order:
            event = events[index]
            path: list[str | int] = ["events", index]
            reason = self._drop_reason(event, path)
            if reason is not None:
                self.dropped_ids.add(event.event_id)
                self.report.dropped_event_ids.append(f"{event.event_id} ({reason})")
                continue
            self.events_by_id[event.event_id] = self._build_event(event, path)
        built: list[AbstractEvent] = []
        for event in events:
            kernel_event = self.events_by_id.get(event.event_id)
            if kernel_event is None:
                continue
            for dependency in event.dependencies:
                parent = self.events_by_id[dependency]
                kernel_event.dependencies.append(parent)
                parent.successors.append(kernel_event)
            built.append(kernel_event)
        return built

    def _drop_reason(self, event: ExportedEvent, path: list[str | int]) -> str | None:
        for dependency in event.dependencies:
            if dependency in self.dropped_ids:
                return f"depends on dropped {dependency}"
        return self._app_drop_reason(event.action, path)

    def _app_drop_reason(self, action: ExportedAction | None, path: list[str | int]) -> str | None:
        """Why an event or completed event calling ``action`` is dropped for its app, or
        None if its app is kept (or it calls none). An app the file does not list is
        skipped (and reported) when ``apps_to_skip`` / ``apps_to_keep`` leave it out, or
        with ``lenient`` or ``skip_unknown_apps``; else it is a ScenarioFormatError."""
        app = action.app if action is not None else None
        if not app or app in self.apps:
            return None
        if app in self.skipped_apps:
            return f"calls skipped app {app}"
        if app in self.unknown_apps:
            return f"calls app {app} of unknown class"
        if self.choice.leaves_out(app):
            self._skip_app(app)
            return f"calls skipped app {app}"
        if self.choice.skip_unknown or self.choice.lenient:
            self._skip_app(app)
            return f"calls unknown app {app}"
        raise ScenarioFormatError(
            [*path, "action", "app"],
            f"no app {app!r} in this scenario's apps ({', '.join(self.apps) or 'none'}); "
            f"leave out its events with apps_to_skip=[{app!r}] or lenient=True",
        )

    def _build_event(self, event: ExportedEvent, path: list[str | int]) -> AbstractEvent:
        if event.class_name not in EVENT_CLASSES:
            raise ScenarioFormatError(
                [*path, "class_name"],
                f"unknown event class {event.class_name!r}; expected one of "
                + ", ".join(EVENT_CLASSES),
            )
        common: dict[str, Any] = {
            "event_type": _enum(EventType, event.event_type, [*path, "event_type"]),
            "event_time": event.event_time,
            "event_relative_time": event.event_relative_time,
            "event_id": event.event_id,
        }
        if event.class_name == "Event":
            action = self._require_action(event, path)
            return Event(**common, action=self._action(action, [*path, "action"]))
        if event.class_name == "OracleEvent":
            return self._oracle(event, path, common)
        if event.class_name == "StopEvent":
            return StopEvent(**common)
        return self._check_event(event, path, common)

    @staticmethod
    def _require_action(event: ExportedEvent, path: list[str | int]) -> ExportedAction:
        if event.action is None or not event.action.function:
            raise ScenarioFormatError(
                [*path, "action"], f"{event.class_name} events need an action with a function"
            )
        return event.action

    def _oracle(
        self, event: ExportedEvent, path: list[str | int], common: dict[str, Any]
    ) -> OracleEvent:
        action = self._require_action(event, path)
        action_path = [*path, "action"]
        if not action.app:
            raise ScenarioFormatError([*action_path, "app"], "an OracleEvent needs an app")
        app = self.apps[action.app]
        function = self._app_function(app, action, action_path)
        args = self._args(action.args, function, action_path)
        comparator_text = (
            event.event_time_comparator if isinstance(event, ExportedOracleEvent) else None
        )
        comparator = (
            None
            if comparator_text is None
            else _enum(EventTimeComparator, comparator_text, [*path, "event_time_comparator"])
        )
        assert action.function is not None  # checked by _require_action
        return OracleEvent(
            **common,
            make_event=OracleCall(
                event_id=event.event_id,
                event_type=common["event_type"],
                app_name=action.app,
                function_name=action.function,
                args=args,
                action_id=action.action_id,
            ),
            action_desc=ActionDescription(
                app=action.app,
                function=action.function,
                args=[
                    {"name": arg.name, "value": args[arg.name], "value_type": arg.value_type}
                    for arg in action.args or []
                ],
            ),
            event_time_comparator=comparator,
        )

    def _check_event(
        self, event: ExportedEvent, path: list[str | int], common: dict[str, Any]
    ) -> AbstractEvent:
        check = event.check
        if check is None:
            raise ScenarioFormatError(
                [*path, "check"],
                f"a {event.class_name} needs 'check' with its functions as "
                "'package.module:function' references (ARE's exporter leaves them out)",
            )
        check_path = [*path, "check"]
        every = 1 if check.schedule_every_ticks is None else check.schedule_every_ticks
        if every < 1:
            raise ScenarioFormatError(
                [*check_path, "schedule_every_ticks"], f"must be >= 1, got {every}"
            )
        if event.class_name == "ConditionCheckEvent":
            if check.condition is None:
                raise ScenarioFormatError(
                    [*check_path, "condition"], "a ConditionCheckEvent needs a condition"
                )
            condition = self._reference(check.condition, [*check_path, "condition"])
            action_id = event.action.action_id if event.action is not None else ""
            return ConditionCheckEvent(
                **common,
                action=ConditionCheckAction(function=condition, action_id=action_id),
                schedule_every_ticks=every,
                timeout=check.timeout,
            )
        return ValidationEvent(
            **common,
            milestones=[
                self._reference(ref, [*check_path, "milestones", i])
                for i, ref in enumerate(check.milestones)
            ],
            minefields=[
                self._reference(ref, [*check_path, "minefields", i])
                for i, ref in enumerate(check.minefields)
            ],
            schedule_every_ticks=every,
            timeout=check.timeout,
        )

    def _action(self, action: ExportedAction, path: list[str | int]) -> Action:
        """An Action calling an app method, or a plain function when ``app`` is null."""
        app: App | None = None
        if action.app:
            app = self.apps[action.app]
            function = self._app_function(app, action, path)
        else:
            function = self._reference(action.function or "", [*path, "function"])
        return Action(
            function=function,
            args=self._args(action.args, function, path),
            app=app,
            action_id=action.action_id,
            operation_type=_operation_type(action.operation_type, function, path),
        )

    def _reference(self, reference: str, path: JsonPath) -> Callable[..., Any]:
        try:
            return resolve_callable_reference(reference, self.modules)
        except ValueError as error:
            raise ScenarioFormatError(path, str(error)) from None

    @staticmethod
    def _app_function(
        app: App, action: ExportedAction, path: list[str | int]
    ) -> Callable[..., Any]:
        name = action.function or ""
        function = getattr(app, name, None) if not name.startswith("_") else None
        if not callable(function):
            raise ScenarioFormatError(
                [*path, "function"], f"app {app.name} ({type(app).__name__}) has no method {name!r}"
            )
        found: Callable[..., Any] = function
        return found

    @staticmethod
    def _args(
        args: list[ExportedActionArg] | None,
        function: Callable[..., Any],
        path: list[str | int],
    ) -> dict[str, Any]:
        decoded: dict[str, Any] = {}
        for position, arg in enumerate(args or []):
            arg_path = [*path, "args", position]
            if arg.name in decoded:
                raise ScenarioFormatError([*arg_path, "name"], f"duplicate arg {arg.name!r}")
            try:
                decoded[arg.name] = decode_value(arg.value, arg.value_type)
            except ValueError as error:
                raise ScenarioFormatError([*arg_path, "value"], str(error)) from None
        try:
            inspect.signature(function).bind(**decoded)
        except TypeError as error:
            raise ScenarioFormatError(
                [*path, "args"], f"{_function_label(function)} cannot take these args: {error}"
            ) from None
        except ValueError:
            pass  # no signature to check against (some builtins)
        return decoded

    # ------------------------------------------------------ completed events

    def build_completed_events(self) -> list[CompletedEvent]:
        """Build the completed events, dropping those of left-out apps and events."""
        built: list[CompletedEvent] = []
        completed_by_id: dict[str, CompletedEvent] = {}
        dropped: set[str] = set()
        records = self.trace.completed_events
        for index, record in enumerate(records):
            path: list[str | int] = ["completed_events", index]
            if record.action is not None and record.action.app in self.unknown_apps:
                completed_by_id[record.event_id] = self._completed_record(record, path)
                built.append(completed_by_id[record.event_id])
                continue
            reason = self._completed_drop_reason(record, path)
            if reason is not None:
                dropped.add(record.event_id)
                self.report.dropped_completed_event_ids.append(f"{record.event_id} ({reason})")
                continue
            event = self._completed_event(record, path, completed_by_id, dropped)
            completed_by_id[record.event_id] = event
            built.append(event)
        return built

    def _completed_record(
        self, record: ExportedCompletedEvent, path: list[str | int]
    ) -> CompletedEvent:
        """A completed event of an app kept unbuilt, as a record (as ARE builds them all)."""
        classes = {app.name: app.class_name or app.name for app in self.trace.apps}
        try:
            mapped = JsonScenarioImporter.map_event(record.model_dump(), classes)
        except ValueError as error:
            raise ScenarioFormatError([*path, "action", "args"], str(error)) from None
        event = CompletedEvent.from_dict(mapped)
        event.metadata = self._metadata(record, path)
        return event

    def _completed_drop_reason(
        self, record: ExportedCompletedEvent, path: list[str | int]
    ) -> str | None:
        if record.event_id in self.dropped_ids:
            return "its event was dropped"
        return self._app_drop_reason(record.action, path)

    def _completed_event(
        self,
        record: ExportedCompletedEvent,
        path: list[str | int],
        completed_by_id: dict[str, CompletedEvent],
        dropped: set[str],
    ) -> CompletedEvent:
        if record.class_name not in COMPLETED_EVENT_CLASSES:
            raise ScenarioFormatError(
                [*path, "class_name"],
                f"unknown completed event class {record.class_name!r}; expected one of "
                + ", ".join(COMPLETED_EVENT_CLASSES),
            )
        event_type = _enum(EventType, record.event_type, [*path, "event_type"])
        dependencies: list[AbstractEvent] = []
        for position, dependency in enumerate(record.dependencies):
            parent = self.events_by_id.get(dependency) or completed_by_id.get(dependency)
            if parent is not None:
                dependencies.append(parent)
            elif dependency not in self.dropped_ids and dependency not in dropped:
                raise ScenarioFormatError(
                    [*path, "dependencies", position], f"unknown event id {dependency!r}"
                )
        action: Action | ConditionCheckAction | None = None
        if event_type is EventType.CONDITION:
            scheduled = self.events_by_id.get(record.event_id)
            if scheduled is None:  # one evaluation's record: "<id>-CHECK_<n>"
                scheduled = self.events_by_id.get(check_base_id(record.event_id))
            if not isinstance(scheduled, ConditionCheckEvent):
                raise ScenarioFormatError(
                    [*path, "event_id"],
                    f"completed condition {record.event_id!r} has no ConditionCheckEvent "
                    "with this id among the events (its function is defined there)",
                )
            action = scheduled.action
        elif record.action is not None:
            action = self._action(record.action, [*path, "action"])
        common: dict[str, Any] = {
            "event_type": event_type,
            "event_time": record.event_time,
            "event_relative_time": record.event_relative_time,
            "event_id": record.event_id,
            "dependencies": dependencies,
            "action": action,
            "metadata": self._metadata(record, path),
        }
        if record.class_name == "CompletedEvent":
            return CompletedEvent(**common)
        oracle = self.events_by_id.get(record.event_id)
        return CompletedOracleEvent(
            **common,
            absolute_event_time=oracle.event_time if isinstance(oracle, OracleEvent) else None,
            event_time_comparator=(
                oracle.event_time_comparator if isinstance(oracle, OracleEvent) else None
            ),
        )

    def _metadata(self, record: ExportedCompletedEvent, path: list[str | int]) -> EventMetadata:
        exported = record.metadata
        if exported is None:
            return EventMetadata()
        try:
            value = decode_return_value(
                exported.return_value, exported.return_value_type, self.modules
            )
        except ValueError as error:
            raise ScenarioFormatError([*path, "metadata", "return_value"], str(error)) from None
        return EventMetadata(
            return_value=value,
            exception=exported.exception,
            exception_stack_trace=exported.exception_stack_trace,
        )

    # ----------------------------------------------------------------- hints

    def build_hints(self) -> list[Hint]:
        """The scenario's hints, with ARE's and the documentation's hint type names."""
        hints: list[Hint] = []
        for position, hint in enumerate(self.trace.metadata.definition.hints):
            path: list[str | int] = ["metadata", "definition", "hints", position, "hint_type"]
            hint_type = _HINT_ALIASES.get(hint.hint_type) or _enum(HintType, hint.hint_type, path)
            hints.append(Hint(hint_type, hint.content, hint.associated_event_id))
        return hints


EnumT = TypeVar("EnumT", EventType, EventTimeComparator, HintType, OperationType)


def _enum(enum_class: type[EnumT], text: str, path: JsonPath) -> EnumT:
    """The member named (or valued) ``text``; ARE writes names, the kernel's values differ."""
    for member in enum_class:
        if text in (member.name, member.value):
            return member
    allowed = ", ".join(member.name for member in enum_class)
    raise ScenarioFormatError(path, f"{text!r} is not one of {allowed}")


def _tag(text: str) -> CapabilityTag | str:
    """ARE's capability tag of that name; other tags stay free-form strings."""
    return CapabilityTag.__members__.get(text, text)


def _operation_type(
    text: str | None, function: Callable[..., Any], path: list[str | int]
) -> OperationType:
    if text is None:
        return default_operation_type(function)
    return _enum(OperationType, text, [*path, "operation_type"])


def _function_label(function: Callable[..., Any]) -> str:
    return getattr(function, "__qualname__", None) or repr(function)


def _topological_order(events: Sequence[ExportedEvent], index_of: dict[str, int]) -> list[int]:
    """Event indices, parents before children; a cycle is an error naming one of its edges."""
    state = [0] * len(events)  # 0 unvisited, 1 on the current path, 2 done
    order: list[int] = []
    for root in range(len(events)):
        if state[root]:
            continue
        # Iterative DFS: (index, next dependency position); the path is the stack.
        stack: list[tuple[int, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            index, position = stack[-1]
            dependencies = events[index].dependencies
            if position == len(dependencies):
                stack.pop()
                state[index] = 2
                order.append(index)
                continue
            stack[-1] = (index, position + 1)
            parent = index_of[dependencies[position]]
            if state[parent] == 1:
                on_path = [i for i, _ in stack]
                cycle = on_path[on_path.index(parent) :]
                names = " -> ".join(events[i].event_id for i in [*cycle, parent])
                raise ScenarioFormatError(
                    ["events", index, "dependencies", position],
                    f"dependency cycle: {names} (each depends on the next)",
                )
            if state[parent] == 0:
                state[parent] = 1
                stack.append((parent, 0))
    return order
