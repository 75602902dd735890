"""Event types, fluent helpers, actions and the event_registered decorator."""

from __future__ import annotations

import asyncio
import threading

import pytest
from _kernel_apps import AgentUserInterface, CounterApp

from sotopia_are.simulation.environment import Environment, EnvironmentConfig
from sotopia_are.simulation.ids import id_namespace
from sotopia_are.simulation.types import (
    AbstractEvent,
    Action,
    CompletedEvent,
    ConditionCheckEvent,
    Event,
    EventMetadata,
    EventRegisterer,
    EventTimeComparator,
    EventType,
    Hint,
    HintType,
    OperationType,
    OracleEvent,
    StopEvent,
    ValidationEvent,
    ValidationResult,
    current_event,
    disable_events,
)


def queue_env() -> Environment:
    return Environment(EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False))


def test_enums_have_the_are_members() -> None:
    assert [t.name for t in EventType] == [
        "AGENT",
        "ENV",
        "USER",
        "CONDITION",
        "VALIDATION",
        "STOP",
    ]
    assert {c.name for c in EventTimeComparator} == {"LESS_THAN", "GREATER_THAN", "EQUAL"}
    assert OperationType.READ.value == "read" and OperationType.WRITE.value == "write"
    hint = Hint(HintType.TASK_HINT, "ask first", associated_event_id="e1")
    assert hint.associated_event_id == "e1"


def test_fluent_helpers_set_fields_and_link_both_ways() -> None:
    app = CounterApp()
    first = Event.from_function(app.add, amount=1).with_id("first").delayed(3)
    second = Event.from_function(app.add, amount=2).depends_on(first, delay_seconds=5)
    third = Event.from_function(app.add, amount=3)
    first.followed_by([third], delay_seconds=7)
    assert first.event_id == "first" and first.event_relative_time == 3
    assert second.dependencies == [first] and first.successors == [second, third]
    assert third.dependencies == [first] and third.event_relative_time == 7
    second.depends_on(first, delay_seconds=5)  # a repeated edge is not doubled
    assert first.successors.count(second) == 1
    assert StopEvent().at_absolute_time(42.0).event_time == 42.0
    assert Event().with_type(EventType.USER).event_type is EventType.USER
    root = Event().depends_on(None, delay_seconds=4)
    assert root.dependencies == [] and root.event_relative_time == 4
    with pytest.raises(ValueError, match="itself"):
        first.depends_on(first)


def test_action_deduces_the_app_and_names() -> None:
    app = CounterApp("counter")
    action = Action(function=app.add, args={"amount": 2})
    assert action.app is app and action.app_name == "counter"
    assert action.function_name == "add" and action.class_name == "CounterApp"
    assert action.action_id.startswith("counter.add-")
    assert action.execute() == 2
    assert Action(function=app.add, args={"amount": 1}, resolved_args={"amount": 5}).execute() == 7


def test_from_function_keeps_the_decorators_operation_type() -> None:
    app = CounterApp()
    assert Event.from_function(app.add, amount=1).action.operation_type is OperationType.WRITE  # type: ignore[union-attr]
    event = Event.from_function(app.read, event_type=EventType.AGENT)
    assert event.event_type is EventType.AGENT
    assert event.action is not None and event.action.operation_type is OperationType.READ


def test_event_execute_is_one_transaction() -> None:
    app = CounterApp()
    env = queue_env()
    env.register_apps([app])
    event = Event.from_function(app.add, amount=4)
    completed = event.execute(event_time=12.0)
    assert isinstance(completed, CompletedEvent)
    assert completed.event_id == event.event_id and completed.event_time == 12.0
    assert completed.metadata == EventMetadata(return_value=4)
    assert len(env.event_log) == 0, "nested decorated calls must not be logged on their own"


def test_fire_individual_events_logs_the_outer_call_once() -> None:
    app = CounterApp()
    env = queue_env()
    env.register_apps([app])
    Event.from_function(app.add, amount=1).execute(fire_individual_events=True)
    assert [e.function_name() for e in env.event_log] == ["add"]


def test_failed_action_records_the_exception() -> None:
    app = CounterApp()
    completed = Event.from_function(app.fail, reason="boom").execute()
    assert completed.failed()
    assert completed.get_exception() == "RuntimeError: boom"
    assert "RuntimeError" in (completed.metadata.exception_stack_trace or "")
    assert completed.metadata.completed


def test_agent_call_is_logged_once_with_the_environment_time() -> None:
    app = CounterApp()
    env = queue_env()
    env.register_apps([app])
    env.run_until(30)
    assert app.add(3) == 3
    (logged,) = env.event_log
    assert logged.event_type is EventType.AGENT and logged.event_time == 30
    assert logged.get_args() == {"amount": 3} and logged.metadata.return_value == 3
    assert logged.action is not None and logged.action.operation_type is OperationType.WRITE


def test_positional_args_are_logged_by_name() -> None:
    app = CounterApp()
    env = queue_env()
    env.register_apps([app])
    app.add(2)
    assert env.event_log[0].get_args() == {"amount": 2}


def test_agent_call_that_raises_is_logged_and_reraised() -> None:
    app = CounterApp()
    env = queue_env()
    env.register_apps([app])
    with pytest.raises(RuntimeError, match="nope"):
        app.fail("nope")
    assert env.event_log[0].get_exception() == "RuntimeError: nope"


def test_unregistered_app_calls_are_plain_calls() -> None:
    app = CounterApp()
    assert app.add(1) == 1 and app.add(amount=2) == 3


def test_capture_mode_returns_events_without_running() -> None:
    app = CounterApp()
    aui = AgentUserInterface()
    with EventRegisterer.capture_mode():
        assert EventRegisterer.is_capture_mode()
        captured = app.add(5)
        message = aui.send_message_to_agent(content="hi")
    assert not EventRegisterer.is_capture_mode()
    assert isinstance(captured, Event) and app.total == 0
    assert captured.event_type is EventType.ENV and message.event_type is EventType.USER
    # As ARE captures them: the app as ``self`` and defaults included; get_args() leaves
    # the app out, and executing passes it only once.
    assert captured.action is not None and captured.action.args == {"self": app, "amount": 5}
    assert captured.action.app is app and aui.messages == []
    completed = captured.execute()
    assert completed.get_args() == {"amount": 5} and app.total == 5


def test_disable_events_runs_without_logging() -> None:
    app = CounterApp()
    env = queue_env()
    env.register_apps([app])
    with disable_events():
        assert app.add(1) == 1
    assert len(env.event_log) == 0


def test_current_event_is_visible_only_inside_its_action() -> None:
    seen: list[AbstractEvent | None] = []
    event = Event(action=Action(function=lambda: seen.append(current_event())))
    event.execute()
    assert seen == [event] and current_event() is None


def test_oracle_keeps_id_timing_and_links() -> None:
    app = CounterApp()
    parent = Event.from_function(app.add, amount=1)
    child = Event.from_function(app.add, amount=2).depends_on(parent, delay_seconds=2)
    grandchild = Event.from_function(app.read).depends_on(child, delay_seconds=1)
    oracle = child.oracle().with_comparator(EventTimeComparator.LESS_THAN)
    assert isinstance(oracle, OracleEvent) and oracle.event_type is EventType.AGENT
    assert oracle.event_id == child.event_id and oracle.event_relative_time == 2
    assert parent.successors == [oracle] and grandchild.dependencies == [oracle]
    assert oracle.action_desc is not None
    assert (oracle.action_desc.app, oracle.action_desc.function) == ("CounterApp", "add")
    assert oracle.action_desc.args == [{"name": "amount", "value": 2}]


def test_condition_and_validation_constructors() -> None:
    def ready(env: object) -> bool:
        return True

    check = ConditionCheckEvent.from_condition(ready, every_tick=3, timeout=9)
    assert check.event_type is EventType.CONDITION
    assert check.schedule_every_ticks == 3 and check.timeout == 9
    assert check.action is not None and check.action.function_name == "ready"
    with pytest.raises(ValueError, match="schedule_every_ticks"):
        ConditionCheckEvent.from_condition(ready, every_tick=0)
    validation = ValidationEvent(milestones=[ready])
    assert validation.event_type is EventType.VALIDATION
    result = validation.validate(queue_env())
    assert result == ValidationResult(True, "all milestones reached")


def test_ids_are_deterministic_inside_a_namespace() -> None:
    def build() -> list[str]:
        with id_namespace("scenario:x:1"):
            return [Event().event_id, StopEvent().event_id]

    first, second = build(), build()
    assert first == second and first[0].startswith("ENV-") and first[1].startswith("STOP-")
    assert Event().event_id != Event().event_id


def test_registration_state_is_per_thread() -> None:
    """Capture mode in one thread leaves other threads' calls alone."""
    app = CounterApp()
    env = queue_env()
    env.register_apps([app])
    entered, release = threading.Event(), threading.Event()

    def capture() -> None:
        with EventRegisterer.capture_mode():
            entered.set()
            release.wait(5)

    thread = threading.Thread(target=capture)
    thread.start()
    entered.wait(5)
    assert app.add(1) == 1
    release.set()
    thread.join()
    assert len(env.event_log) == 1


async def test_registration_state_is_per_asyncio_task() -> None:
    apps = [CounterApp(f"c{i}") for i in range(2)]
    envs = [queue_env() for _ in apps]
    for env, app in zip(envs, apps, strict=True):
        env.register_apps([app])

    async def capture() -> None:
        with EventRegisterer.capture_mode():
            await asyncio.sleep(0.01)
            assert isinstance(apps[0].add(1), Event)

    async def agent() -> None:
        await asyncio.sleep(0)
        apps[1].add(1)

    await asyncio.gather(capture(), agent())
    assert len(envs[0].event_log) == 0 and len(envs[1].event_log) == 1


def test_are_names_keep_their_import_paths() -> None:
    # types.py and environment.py are faces over smaller modules; ARE code imports
    # from them, so every name must stay there.
    import sotopia_are.simulation.environment as environment
    import sotopia_are.simulation.types as types

    assert sorted(types.__all__) == [
        "AbstractEnvironment",
        "AbstractEvent",
        "Action",
        "ActionDescription",
        "CapabilityTag",
        "CompletedEvent",
        "CompletedOracleEvent",
        "ConditionCheckAction",
        "ConditionCheckEvent",
        "EnvironmentState",
        "EnvironmentType",
        "Event",
        "EventMetadata",
        "EventRegisterer",
        "EventTimeComparator",
        "EventType",
        "ExecutionMetadata",
        "Hint",
        "HintType",
        "OperationType",
        "OracleEvent",
        "PlaceholderMetadata",
        "ScenarioGUIConfig",
        "SimulatedGenerationTimeConfig",
        "StopEvent",
        "ToolAugmentationConfig",
        "ValidationEvent",
        "ValidationResult",
        "current_event",
        "disable_events",
        "event_registered",
    ]
    assert sorted(environment.__all__) == [
        "Environment",
        "EnvironmentConfig",
        "EnvironmentState",
        "EnvironmentType",
        "EventLog",
        "run_in_oracle_mode",
    ]
    for module in (types, environment):
        assert all(getattr(module, name, None) is not None for name in module.__all__)
