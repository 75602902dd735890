"""Exporting a scenario and its run as ARE's scenario JSON (``ExportedTrace``).

Every event kind is written, including condition and validation events, whose functions
become importable references (ARE leaves such events out); args and return values keep
their types (see :mod:`.values`). Anything that cannot be written so that it imports
again — a lambda condition, a tuple arg, an app class that cannot be found by name, an
oracle without a description — raises :class:`ScenarioExportError` before anything is
written. Exporting an imported scenario writes back the metadata, context and app states
it was imported with, so export → import → export gives the same bytes.
"""

import json
import logging
import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic_core import PydanticSerializationError
from pydantic_core import to_json as _to_json

from sotopia_are.simulation.actions import function_name
from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.apps.registry import AppRegistry, default_app_registry
from sotopia_are.simulation.environment import Environment
from sotopia_are.simulation.files import write_text_atomically
from sotopia_are.simulation.scenarios.scenario import Scenario
from sotopia_are.simulation.scenarios.scenario_imported_from_json import (
    BenchmarkScenarioImportedFromJson,
    ScenarioImportedFromJson,
)
from sotopia_are.simulation.types import (
    AbstractEvent,
    Action,
    CompletedEvent,
    CompletedOracleEvent,
    ConditionCheckAction,
    ConditionCheckEvent,
    Event,
    EventType,
    OperationType,
    OracleEvent,
    StopEvent,
    ValidationEvent,
)

from .callables import callable_reference
from .errors import ScenarioExportError
from .models import (
    TRACE_V1_VERSION,
    ExportedAction,
    ExportedActionArg,
    ExportedApp,
    ExportedCompletedEvent,
    ExportedEvent,
    ExportedEventCheck,
    ExportedHint,
    ExportedOracleEvent,
    ExportedTrace,
    ExportedTraceAnnotationMetadata,
    ExportedTraceDefinitionMetadata,
    ExportedTraceMetadata,
    ExportedTraceSimulationMetadata,
)
from .oracle_call import OracleCall
from .return_values import encode_return_value
from .values import check_json_value, encode_value

__all__ = ["ExportOptions", "JsonScenarioExporter", "SerializableLog"]

logger = logging.getLogger(__name__)


class SerializableLog(Protocol):
    """A world log entry that can write itself as one JSON string (ARE's ``BaseAgentLog``)."""

    def serialize(self) -> str: ...


@dataclass(frozen=True)
class ExportOptions:
    """What a trace is written with besides the environment, the scenario and its id.

    The fields are ARE's ``export_to_json`` parameters (``indent`` aside) and two of ours.
    A field left None is taken from an imported scenario's own metadata, else left empty.

    - runner_config: written as ``metadata.runner_config``.
    - model_id, agent_id: the simulation metadata (``model_id`` only with an ``agent_id``).
    - validation_decision, annotation_id, annotator_name, comment, annotation_date: the
      annotation metadata; ``annotation_date`` defaults to now.
    - context: the trace's free-text context.
    - apps_state: maps app names to ``{"class_name": ..., "serialized_state": "<json>"}``
      and replaces the scenario's apps.
    - world_logs: strings, or entries that ``serialize()`` themselves.
    - export_apps: False leaves the apps out, when Hugging Face metadata can recover them.
    - scenario_exception: defaults to ``env.exception``.
    - completed_events: defaults to ``env.event_log``.
    """

    runner_config: dict[str, Any] | None = None
    model_id: str | None = None
    agent_id: str | None = None
    validation_decision: str | None = None
    annotation_id: str | None = None
    annotator_name: str | None = None
    context: str | None = None
    comment: str | None = None
    apps_state: dict[str, Any] | None = None
    world_logs: Sequence[str | SerializableLog] | None = None
    export_apps: bool = True
    scenario_exception: BaseException | None = None
    completed_events: Sequence[CompletedEvent] | None = None
    annotation_date: float | None = None


class JsonScenarioExporter:
    """Writes a scenario, the completed events of its run and its metadata as JSON.

    ``app_registry`` gives each app class the name written as its ``class_name``
    (its registered name, else its import path).
    """

    def __init__(self, app_registry: AppRegistry | None = None) -> None:
        self.app_registry = default_app_registry if app_registry is None else app_registry

    def export_to_json(
        self,
        env: Environment,
        scenario: Scenario,
        scenario_id: str,
        runner_config: dict[str, Any] | None = None,
        model_id: str | None = None,
        agent_id: str | None = None,
        validation_decision: str | None = None,
        annotation_id: str | None = None,
        annotator_name: str | None = None,
        context: str | None = None,
        comment: str | None = None,
        indent: int | None = None,
        apps_state: dict[str, Any] | None = None,
        world_logs: Sequence[str | SerializableLog] | None = None,
        export_apps: bool = True,
        scenario_exception: BaseException | None = None,
        *,
        completed_events: Sequence[CompletedEvent] | None = None,
        annotation_date: float | None = None,
    ) -> str:
        """The trace as a JSON string; :class:`ScenarioExportError` if it cannot be written.

        ARE's signature, positions included; ``indent`` is the JSON indent and every other
        parameter is the :class:`ExportOptions` field of its name (see there).
        """
        options = ExportOptions(
            runner_config=runner_config,
            model_id=model_id,
            agent_id=agent_id,
            validation_decision=validation_decision,
            annotation_id=annotation_id,
            annotator_name=annotator_name,
            context=context,
            comment=comment,
            apps_state=apps_state,
            world_logs=world_logs,
            export_apps=export_apps,
            scenario_exception=scenario_exception,
            completed_events=completed_events,
            annotation_date=annotation_date,
        )
        return self.to_trace(env, scenario, scenario_id, options).model_dump_json(indent=indent)

    def export_to_json_file(
        self,
        env: Environment,
        scenario: Scenario,
        model_id: str | None = None,
        agent_id: str | None = None,
        validation_decision: str | None = None,
        output_dir: str | None = None,
        export_apps: bool = True,
        scenario_exception: BaseException | None = None,
        runner_config: dict[str, Any] | None = None,
    ) -> tuple[bool, str | None]:
        """Write the trace to ``<output_dir>/<scenario_id>[_run<n>].json``.

        Returns ``(True, path)``, or ``(False, None)`` after logging why (the file is then
        not written at all; it is written to a temporary file and renamed into place).
        ``output_dir`` defaults to the system's temporary directory.
        """
        try:
            text = self.export_to_json(
                env,
                scenario,
                scenario.scenario_id,
                runner_config=runner_config,
                model_id=model_id,
                agent_id=agent_id,
                validation_decision=validation_decision,
                export_apps=export_apps,
                scenario_exception=scenario_exception,
            )
        except ScenarioExportError as error:
            logger.error("cannot export scenario %s: %s", scenario.scenario_id, error)
            return False, None
        directory = tempfile.gettempdir() if output_dir is None else output_dir
        run_number = getattr(scenario, "run_number", None)
        suffix = "" if run_number is None else f"_run{run_number}"
        path = os.path.join(directory, f"{scenario.scenario_id}{suffix}.json")
        try:
            write_text_atomically(path, text)
        except OSError as error:
            logger.error("cannot write %s: %s", path, error)
            return False, None
        return True, path

    def to_trace(
        self,
        env: Environment,
        scenario: Scenario,
        scenario_id: str,
        options: ExportOptions | None = None,
    ) -> ExportedTrace:
        """The trace as a model (what :meth:`export_to_json` serialises); ``options``
        default to :class:`ExportOptions`'s defaults."""
        opts = ExportOptions() if options is None else options
        imported = scenario if isinstance(scenario, ScenarioImportedFromJson) else None
        source = imported.metadata if imported is not None else None
        exception = env.exception if opts.scenario_exception is None else opts.scenario_exception
        source_definition = source.definition if source is not None else None
        hf_metadata = (
            scenario.hf_metadata
            if isinstance(scenario, BenchmarkScenarioImportedFromJson)
            else (source_definition.hf_metadata if source_definition is not None else None)
        )
        definition = ExportedTraceDefinitionMetadata(
            scenario_id=scenario_id,
            seed=scenario.seed,
            duration=scenario.duration,
            time_increment_in_seconds=scenario.time_increment_in_seconds,
            start_time=scenario.start_time,
            run_number=getattr(scenario, "run_number", None),
            hints=[
                ExportedHint(
                    hint_type=hint.hint_type.value,
                    content=hint.content,
                    associated_event_id=hint.associated_event_id,
                )
                for hint in scenario.hints or []
            ],
            config=source_definition.config if source_definition else None,
            has_a2a_augmentation=bool(source_definition and source_definition.has_a2a_augmentation),
            has_tool_augmentation=bool(
                source_definition and source_definition.has_tool_augmentation
            ),
            has_env_events_augmentation=bool(
                source_definition and source_definition.has_env_events_augmentation
            ),
            has_exception=exception is not None,
            exception_type=type(exception).__name__ if exception is not None else None,
            exception_message=str(exception) if exception is not None else None,
            tags=[tag if isinstance(tag, str) else tag.name for tag in scenario.tags],
            hf_metadata=hf_metadata,
        )
        simulation = (
            source.simulation if source is not None and source.simulation is not None else None
        )
        if opts.agent_id is not None or opts.model_id is not None or simulation is None:
            simulation = ExportedTraceSimulationMetadata(
                agent_id=opts.agent_id, model_id=opts.model_id if opts.agent_id else None
            )
        old = source.annotation if source is not None else None
        annotation = ExportedTraceAnnotationMetadata(
            annotation_id=opts.annotation_id
            if opts.annotation_id is not None
            else _get(old, "annotation_id"),
            annotator=opts.annotator_name
            if opts.annotator_name is not None
            else _get(old, "annotator"),
            validation_decision=(
                opts.validation_decision
                if opts.validation_decision is not None
                else _get(old, "validation_decision")
            ),
            comment=opts.comment if opts.comment is not None else _get(old, "comment"),
            date=(
                opts.annotation_date
                if opts.annotation_date is not None
                else (old.date if old is not None else time.time())
            ),
        )
        metadata = ExportedTraceMetadata(
            definition=definition,
            simulation=simulation,
            annotation=annotation,
            execution=source.execution if source is not None else None,
            runner_config=(
                opts.runner_config
                if opts.runner_config is not None
                else (source.runner_config if source is not None else None)
            ),
        )
        export_apps = opts.export_apps
        if not export_apps and hf_metadata is None:
            logger.warning(
                "export_apps=False but the scenario has no Hugging Face metadata to recover "
                "its apps from; exporting the apps anyway"
            )
            export_apps = True
        log = env.event_log.list_view() if opts.completed_events is None else opts.completed_events
        return ExportedTrace(
            metadata=metadata,
            world_logs=[
                entry if isinstance(entry, str) else entry.serialize()
                for entry in opts.world_logs or []
            ],
            apps=self._apps(scenario, opts.apps_state) if export_apps else [],
            events=[convert_event(event) for event in _all_events(scenario.events)],
            completed_events=[convert_completed_event(event) for event in log],
            version=TRACE_V1_VERSION,
            context=opts.context
            if opts.context is not None
            else (imported.context if imported else None),
            augmentation=imported.augmentation if imported is not None else None,
        )

    @staticmethod
    def convert_action(action: Action | ConditionCheckAction) -> ExportedAction:
        """ARE's helper: one action as the format writes it (its resolved args if it has
        any, else its args; ``self`` left out). A condition check's action has only its id
        and function name. Raises :class:`ScenarioExportError`, as the exporter does, for
        an arg the format cannot hold."""
        if isinstance(action, ConditionCheckAction):
            return _condition_action(action)
        return convert_action(action, f"action {action.action_id}")

    @staticmethod
    def convert_action_args(name: str, value: Any) -> ExportedActionArg:
        """ARE's helper: one arg as ``(name, value, value_type)``, leniently as ARE writes it.

        Values :func:`.values.encode_value` can write are written so; any other value is
        written as its ``str()`` and its type's name, which imports back as an
        :class:`.values.OpaqueValue` (text, not the object). The exporter itself does not
        write such values: it refuses them (see :meth:`export_to_json`).
        """
        try:
            return ExportedActionArg.model_validate(_arg(name, value, ""))
        except ScenarioExportError:
            return ExportedActionArg(name=name, value=str(value), value_type=type(value).__name__)

    def _apps(self, scenario: Scenario, apps_state: dict[str, Any] | None) -> list[ExportedApp]:
        if apps_state is not None:
            return [_app_from_state(name, data) for name, data in apps_state.items()]
        live = scenario.apps or []
        if not isinstance(scenario, ScenarioImportedFromJson):
            return [self._live_app(app) for app in live]
        # An imported app is written as the file had it; an app of unknown class (kept
        # unbuilt, see the importer) too, although it is not among the live apps.
        report = scenario.import_report
        unknown = set(report.unknown_apps) if report is not None else set()
        names = {app.name for app in live}
        written = [r for r in scenario.app_records if r.name in names or r.name in unknown]
        recorded = {record.name for record in written}
        return written + [self._live_app(app) for app in live if app.name not in recorded]

    def _live_app(self, app: App) -> ExportedApp:
        try:
            class_name = self.app_registry.name_of(type(app))
        except ValueError as error:
            raise ScenarioExportError(f"app {app.name}: {error}") from None
        state = app.get_state()
        try:
            check_json_value(state)
        except ValueError as error:
            raise ScenarioExportError(f"app {app.name}: state {error}") from None
        if state is not None and not isinstance(state, dict):
            raise ScenarioExportError(f"app {app.name}: get_state() must return a dict or None")
        return ExportedApp(name=app.name, class_name=class_name, app_state=state)


def convert_event(event: AbstractEvent) -> ExportedEvent:
    """One scheduled event as the format writes it; ``ScenarioExportError`` if impossible."""
    common: dict[str, Any] = {
        "class_name": type(event).__name__,
        "event_type": event.event_type.name,
        "event_time": event.event_time,
        "event_id": event.event_id,
        "dependencies": [parent.event_id for parent in event.dependencies],
        "event_relative_time": event.event_relative_time,
    }
    where = f"event {event.event_id}"
    if type(event) is Event:
        if event.action is None:
            raise ScenarioExportError(f"{where} has no action")
        return ExportedEvent(**common, action=convert_action(event.action, where))
    if type(event) is OracleEvent:
        description = event.action_desc
        if description is None:
            raise ScenarioExportError(
                f"{where}: an oracle event needs an action_desc to be exported"
            )
        comparator = event.event_time_comparator
        return ExportedOracleEvent(
            **common,
            action=ExportedAction(
                # ARE writes ""; an imported oracle knows the id its runs use, so keep it.
                action_id=(
                    event.make_event.action_id if isinstance(event.make_event, OracleCall) else ""
                ),
                app=description.app,
                function=description.function,
                operation_type=None,
                args=[
                    ExportedActionArg.model_validate(_arg(str(arg["name"]), arg["value"], where))
                    for arg in description.args
                ],
            ),
            event_time_comparator=comparator.value if comparator is not None else None,
        )
    if type(event) is ConditionCheckEvent:
        if event.action is None:
            raise ScenarioExportError(f"{where} has no condition")
        return ExportedEvent(
            **common,
            action=_condition_action(event.action),
            check=ExportedEventCheck(
                condition=_reference(event.action.function, where),
                schedule_every_ticks=event.schedule_every_ticks,
                timeout=event.timeout,
            ),
        )
    if type(event) is ValidationEvent:
        return ExportedEvent(
            **common,
            check=ExportedEventCheck(
                milestones=[_reference(f, where) for f in event.milestones],
                minefields=[_reference(f, where) for f in event.minefields],
                schedule_every_ticks=event.schedule_every_ticks,
                timeout=event.timeout,
            ),
        )
    if type(event) is StopEvent:
        return ExportedEvent(**common)
    raise ScenarioExportError(f"{where}: events of class {type(event).__name__} cannot be exported")


def convert_completed_event(event: CompletedEvent) -> ExportedCompletedEvent:
    """One completed event as the format writes it; ``ScenarioExportError`` if impossible."""
    event_class = type(event)
    if event_class is not CompletedEvent and event_class is not CompletedOracleEvent:
        raise ScenarioExportError(
            f"completed event {event.event_id}: class {event_class.__name__} cannot be exported"
        )
    if event.event_time is None:
        raise ScenarioExportError(f"completed event {event.event_id} has no event_time")
    action: dict[str, Any] | ExportedAction | None = None
    if isinstance(event.action, Action):
        action = _action_document(event.action, f"completed event {event.event_id}")
    elif isinstance(event.action, ConditionCheckAction):
        action = _condition_action(event.action)
    metadata = event.metadata
    returned = metadata.return_value
    value: str | None = None
    value_type: str | None = None
    if returned is not None:  # most calls return nothing
        try:
            value, value_type = encode_return_value(returned)
        except ValueError as error:
            raise ScenarioExportError(
                f"completed event {event.event_id}: return value {error}"
            ) from None
    parents = event.dependencies
    # Validated as one document: one validation of the whole costs far less than one per
    # part, and less than making the models in Python without validating them.
    return ExportedCompletedEvent.model_validate(
        {
            "class_name": event_class.__name__,
            "event_type": _name(event.event_type),
            "event_time": event.event_time,
            "event_id": event.event_id,
            "dependencies": [parent.event_id for parent in parents] if parents else [],
            "event_relative_time": event.event_relative_time,
            "action": action,
            "metadata": {
                "return_value": value,
                "return_value_type": value_type,
                "exception": metadata.exception,
                "exception_stack_trace": metadata.exception_stack_trace,
            },
        }
    )


def completed_event_json(event: CompletedEvent) -> str:
    """``convert_completed_event(event).model_dump_json()``, byte for byte and with the
    same errors: the text the store keeps of every logged call.

    The text of a logged app call of plain fields (see :func:`_plain_call_json`) is
    written directly, without the export's model: validating the model and serialising
    it cost several times more than the rest of logging the call, and the model's JSON of
    such a call is a fixed frame around the call's texts."""
    try:
        text = _plain_call_json(event)
    except PydanticSerializationError:
        text = None  # a text JSON cannot hold: the model's error, as the model raises it
    return text if text is not None else convert_completed_event(event).model_dump_json()


def _plain_call_json(event: CompletedEvent) -> str | None:
    """The model's JSON of ``event`` if it is a completed app call the model holds as it
    is: no dependencies, relative time or exception; its time a float that Python's
    ``repr`` writes as pydantic's JSON does; every text exactly a ``str``, every argument
    and the return value a ``str`` or None. None for any other event (and for args that
    name ``self``, as ARE's captured ones do: the model's way leaves it out)."""
    action = event.action
    metadata = event.metadata
    if (
        type(event) is not CompletedEvent
        or type(action) is not Action
        or action.app is None
        or event.dependencies
        or event.event_relative_time is not None
        or not (metadata.return_value is None or type(metadata.return_value) is str)
        or metadata.exception is not None
        or metadata.exception_stack_trace is not None
        or type(event.event_type) is not EventType
        or type(action.operation_type) is not OperationType
    ):
        return None
    time = event.event_time
    # repr and pydantic's JSON write a float alike (the shortest digits that read back,
    # positionally) between these bounds; outside them they differ (1e-05 and 1e-5,
    # 1e+16 and 1e16), and NaN and the infinities fail both tests.
    if type(time) is not float or not (time == 0.0 or 1e-3 <= abs(time) < 1e15):
        return None
    event_id, action_id, app_name = event.event_id, action.action_id, action.app.name
    function = function_name(action.function)
    if not (
        type(event_id) is str
        and type(action_id) is str
        and type(app_name) is str
        and type(function) is str
    ):
        return None
    returned = metadata.return_value
    args = action.resolved_args or action.args
    if "self" in args:  # (ARE's captured args): the model leaves it out, slower
        return None
    # Each argument is written as it stands, its texts kept to be checked at once below.
    parts: list[str] = []
    texts = [event_id, action_id, app_name, function, returned or "", *args]
    for name, value in args.items():
        if type(name) is not str:
            return None
        if type(value) is str:
            parts.append(f'{{"name":"{name}","value":"{value}","value_type":"str"}}')
            texts.append(value)
        elif value is None:
            parts.append(f'{{"name":"{name}","value":null,"value_type":null}}')
        else:
            return None
    if not _as_they_are("".join(texts)):
        # Some text needs escaping: every text as pydantic escapes it.
        event_id, action_id, app_name, function = (
            _escaped(event_id),
            _escaped(action_id),
            _escaped(app_name),
            _escaped(function),
        )
        returned = None if returned is None else _escaped(returned)
        parts = [
            f'{{"name":"{_escaped(name)}","value":"{_escaped(value)}","value_type":"str"}}'
            if value is not None
            else f'{{"name":"{_escaped(name)}","value":null,"value_type":null}}'
            for name, value in args.items()
        ]
    arg_texts = ",".join(parts)
    return (
        f'{{"class_name":"CompletedEvent","event_type":"{event.event_type._name_}",'
        f'"event_time":{time!r},"event_id":"{event_id}","dependencies":[],'
        f'"event_relative_time":null,"action":{{"action_id":"{action_id}",'
        f'"app":"{app_name}","function":"{function}",'
        f'"operation_type":"{action.operation_type._name_}","args":[{arg_texts}]}},'
        '"metadata":{'
        + (
            '"return_value":null,"return_value_type":null'
            if returned is None
            else f'"return_value":"{returned}","return_value_type":"str"'
        )
        + ',"exception":null,"exception_stack_trace":null}}'
    )


def _as_they_are(text: str) -> bool:
    """Whether pydantic's JSON writes ``text``'s characters as they are: no control
    character, quote or backslash (``isprintable`` also refuses surrogates, which JSON
    cannot hold, and some characters written as they are, which then take the longer
    way)."""
    return text.isprintable() and '"' not in text and "\\" not in text


def _escaped(text: str) -> str:
    """``text`` as pydantic's JSON writes it between its quotes."""
    return _to_json(text).decode()[1:-1]


# The names of the kernel's enums as the format writes them.
_NAMES: dict[EventType | OperationType, str] = {
    member: member.name for members in (EventType, OperationType) for member in members
}


def _name(member: EventType | OperationType) -> str:
    """``member.name``, read where it is kept: every logged call's export asks it twice, and
    ``name`` is a descriptor call and an enum's hash a Python function. Anything else is
    looked up (and refused) as before."""
    if type(member) is EventType or type(member) is OperationType:
        return member._name_
    return _NAMES[member]


def convert_action(action: Action, where: str) -> ExportedAction:
    """An app call (``app`` set) or a plain function call (``function`` as a reference)."""
    return ExportedAction.model_validate(_action_document(action, where))


def _action_document(action: Action, where: str) -> dict[str, Any]:
    """:func:`convert_action`'s fields, to validate (alone or in an event)."""
    args = action.resolved_args or action.args
    app = action.app
    documents: list[dict[str, str | None]] = []
    for name, value in args.items():
        if name == "self":
            continue
        # A string, the most common value, is its own text: encode_value's answer.
        if type(value) is str:
            documents.append({"name": name, "value": value, "value_type": "str"})
        else:
            documents.append(_arg(name, value, where))
    return {
        "action_id": action.action_id,
        "app": app.name if app is not None else None,
        "function": (
            function_name(action.function)
            if app is not None
            else _reference(action.function, where)
        ),
        "operation_type": _name(action.operation_type),
        "args": documents,
    }


def _condition_action(action: ConditionCheckAction) -> ExportedAction:
    return ExportedAction(action_id=action.action_id, function=action.function_name)


def _arg(name: str, value: Any, where: str) -> dict[str, str | None]:
    """An :class:`ExportedActionArg`'s fields, to validate with its action."""
    try:
        text, value_type = encode_value(value)
    except ValueError as error:
        raise ScenarioExportError(f"{where}: arg {name!r}: {error}") from None
    return {"name": name, "value": text, "value_type": value_type}


def _reference(function: Any, where: str) -> str:
    try:
        return callable_reference(function)
    except ValueError as error:
        raise ScenarioExportError(f"{where}: {error}") from None


def _app_from_state(name: str, data: Any) -> ExportedApp:
    try:
        class_name = data["class_name"]
        state = json.loads(data["serialized_state"])
    except (TypeError, KeyError, json.JSONDecodeError) as error:
        raise ScenarioExportError(
            f"apps_state[{name!r}] must be {{'class_name': str, 'serialized_state': JSON "
            f"text}} ({type(error).__name__}: {error})"
        ) from None
    if not isinstance(class_name, str) or not (state is None or isinstance(state, dict)):
        raise ScenarioExportError(
            f"apps_state[{name!r}]: class_name must be a string and the state a JSON object"
        )
    return ExportedApp(name=name, class_name=class_name, app_state=state)


def _all_events(roots: Iterable[AbstractEvent]) -> list[AbstractEvent]:
    """The scenario's events and every event linked to them, listed events first.

    The kernel schedules successors of completed events by itself, so a scenario may list
    only its first events; the file must hold them all for dependencies to resolve.
    """
    ordered: list[AbstractEvent] = list(dict.fromkeys(roots))
    seen = set(ordered)
    position = 0
    while position < len(ordered):
        for linked in [*ordered[position].dependencies, *ordered[position].successors]:
            if linked not in seen:
                seen.add(linked)
                ordered.append(linked)
        position += 1
    return ordered


def _get(model: Any, field: str) -> Any:
    return getattr(model, field) if model is not None else None
