"""The Environment: step API, scheduling rules, checks, oracle mode and lifecycle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _kernel_apps import AgentUserInterface, CounterApp

from sotopia_are.simulation.environment import (
    Environment,
    EnvironmentConfig,
    EnvironmentState,
)
from sotopia_are.simulation.files import write_text_atomically
from sotopia_are.simulation.notification_system import MessageType
from sotopia_are.simulation.scenarios.scenario import Scenario
from sotopia_are.simulation.types import (
    AbstractEnvironment,
    AbstractEvent,
    CompletedEvent,
    CompletedOracleEvent,
    ConditionCheckEvent,
    Event,
    EventRegisterer,
    EventType,
    StopEvent,
    ValidationEvent,
    ValidationResult,
)


def make_env(**overrides: object) -> Environment:
    settings: dict[str, object] = {"queue_based_loop": True, "duration": None, "verbose": False}
    settings.update(overrides)
    return Environment(EnvironmentConfig(**settings))  # type: ignore[arg-type]


def times(env: Environment) -> list[tuple[str, float | None]]:
    return [(event.event_id, event.event_time) for event in env.event_log]


def counter_total(env: AbstractEnvironment) -> int:
    app = env.get_app("CounterApp")
    assert isinstance(app, CounterApp)
    return app.total


# ----------------------------------------------------------------- step API


def test_step_runs_one_due_time_at_a_time_on_a_virtual_clock() -> None:
    app = CounterApp()
    env = make_env(start_time=100)
    env.register_apps([app])
    env.schedule(
        [
            Event.from_function(app.add, amount=1).with_id("a").delayed(5),
            Event.from_function(app.add, amount=1).with_id("b").delayed(5),
            Event.from_function(app.add, amount=1).with_id("c").delayed(9),
        ]
    )
    assert env.state is EnvironmentState.SETUP and env.next_event_time() == 105
    assert env.step() and times(env) == [("a", 105), ("b", 105)]
    assert env.current_time == 105 and env.is_running()
    assert env.step() and times(env)[-1] == ("c", 109)
    assert not env.step() and env.current_time == 109


def test_run_until_stops_at_the_given_time_and_moves_the_clock() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    env.schedule([Event.from_function(app.add, amount=1).delayed(t) for t in (1, 2, 8)])
    env.run_until(5)
    assert [e.event_time for e in env.event_log] == [1, 2] and env.current_time == 5
    env.run_until_idle()
    assert [e.event_time for e in env.event_log] == [1, 2, 8]


def test_the_virtual_clock_never_reads_the_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    import time as time_module

    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    env.schedule(Event.from_function(app.add, amount=1).delayed(3600))

    def forbidden() -> float:
        raise AssertionError("the wall clock was read")

    monkeypatch.setattr(time_module, "time", forbidden)
    monkeypatch.setattr(time_module, "monotonic", forbidden)
    env.run_until_idle()
    assert env.event_log[0].event_time == 3600


def test_same_time_order_is_priority_then_insertion() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    stop = StopEvent().with_id("stop").delayed(1)
    validation = ValidationEvent(milestones=[lambda e: True]).with_id("validation").delayed(1)
    check = ConditionCheckEvent.from_condition(lambda e: True).with_id("check").delayed(1)
    env.schedule(
        [
            stop,
            validation,
            check,
            Event.from_function(app.add, amount=1).with_id("env").delayed(1),
            Event.from_function(app.read, event_type=EventType.AGENT).with_id("agent").delayed(1),
            Event.from_function(app.read, event_type=EventType.USER).with_id("user").delayed(1),
        ]
    )
    env.run_until_idle()
    assert [e.event_id for e in env.event_log] == [
        "env",
        "agent",
        "user",
        "check-CHECK_0",
        "validation",
        "stop",
    ]


def test_dependants_with_zero_delay_run_in_the_same_step_after_their_parent() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    parent = Event.from_function(app.add, amount=1).with_id("parent").delayed(2)
    check = ConditionCheckEvent.from_condition(lambda e: True).with_id("check").delayed(2)
    child = Event.from_function(app.add, amount=1).with_id("child").depends_on(parent, 0)
    env.schedule([parent, check, child])
    assert env.step()
    assert times(env) == [("parent", 2), ("child", 2), ("check-CHECK_0", 2)]


# ------------------------------------------------------------ dependencies


def test_dependant_runs_delay_after_its_last_parent_completed() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    early = Event.from_function(app.add, amount=1).with_id("early").delayed(1)
    late = Event.from_function(app.add, amount=1).with_id("late").delayed(10)
    child = Event.from_function(app.read).with_id("child").depends_on([early, late], 3)
    env.schedule([child, late, early])  # order of scheduling does not matter
    env.run_until_idle()
    assert times(env) == [("early", 1), ("late", 10), ("child", 13)]


def test_successors_need_not_be_scheduled_explicitly() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    root = Event.from_function(app.add, amount=1).with_id("root")
    root.followed_by(Event.from_function(app.add, amount=1).with_id("next"), delay_seconds=4)
    env.schedule(root)
    env.run_until_idle()
    assert times(env) == [("root", 0), ("next", 4)]


def test_failed_event_still_completes_and_releases_dependants() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    failing = Event.from_function(app.fail, reason="x").with_id("failing")
    after = Event.from_function(app.add, amount=1).with_id("after").depends_on(failing, 1)
    env.schedule([failing, after])
    env.run_until_idle()
    assert [e.failed() for e in env.event_log] == [True, False]


def test_absolute_time_in_the_past_runs_now() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    env.run_until(50)
    env.schedule(Event.from_function(app.add, amount=1).at_absolute_time(10))
    env.run_until_idle()
    assert env.event_log[0].event_time == 50


def test_events_beyond_the_duration_do_not_run() -> None:
    app = CounterApp()
    env = make_env(duration=10)
    env.register_apps([app])
    env.schedule([Event.from_function(app.add, amount=1).delayed(t) for t in (5, 10, 11)])
    env.run_until_idle()
    assert [e.event_time for e in env.event_log] == [5, 10]


# ---------------------------------------------------- condition checks (ref bug)


def test_dependant_of_a_condition_that_never_holds_never_runs() -> None:
    """The reference releases dependants of a timed-out check; they must never run."""
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    never = ConditionCheckEvent.from_condition(lambda e: False, timeout=5).with_id("never")
    dependant = Event.from_function(app.add, amount=1).with_id("dependant").depends_on(never)
    env.schedule([never, dependant])
    env.run_until_idle()
    # Every evaluation is logged, as ARE logs them; none held, so nothing else ran.
    assert times(env) == [(f"never-CHECK_{t}", t) for t in range(6)] and app.total == 0
    assert all(e.metadata.return_value is False for e in env.event_log)
    assert env.current_time == 5, "checks at ticks 0..5, then it gives up"


def test_condition_without_timeout_polls_until_the_duration() -> None:
    calls: list[float] = []

    def never(env: AbstractEnvironment) -> bool:
        calls.append(env.current_time)
        return False

    app = CounterApp()
    env = make_env(duration=6, time_increment_in_seconds=2)
    env.register_apps([app])
    check = ConditionCheckEvent.from_condition(never)
    env.schedule([check, Event.from_function(app.add, amount=1).depends_on(check)])
    while env.step():
        pass
    assert calls == [0, 2, 4, 6] and app.total == 0


def test_condition_releases_dependants_when_it_first_holds() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    bump = [Event.from_function(app.add, amount=1).delayed(t) for t in (3, 7)]
    check = ConditionCheckEvent.from_condition(lambda e: counter_total(e) >= 2, every_tick=2)
    follow = Event.from_function(app.add, amount=100).with_id("follow").depends_on(check, 1)
    env.schedule([*bump, check.with_id("check"), follow])
    env.run_until_idle()
    assert times(env)[-2:] == [("check-CHECK_4", 8), ("follow", 9)]
    assert env.event_log[-2].metadata.return_value is True


def test_condition_that_raises_is_recorded_and_releases_nothing() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])

    def broken(env: AbstractEnvironment) -> bool:
        raise ValueError("bad predicate")

    check = ConditionCheckEvent.from_condition(broken)
    env.schedule([check, Event.from_function(app.add, amount=1).depends_on(check)])
    env.run_until_idle()
    (record,) = env.event_log
    assert record.get_exception() == "ValueError: bad predicate" and app.total == 0


# ----------------------------------------------------------------- validation


def test_validation_succeeds_once_every_milestone_was_reached() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    env.schedule([Event.from_function(app.add, amount=1).delayed(t) for t in (2, 4)])
    validation = ValidationEvent(
        milestones=[lambda e: counter_total(e) == 1, lambda e: counter_total(e) == 2],
        timeout=10,
    )
    after = Event.from_function(app.read).with_id("after").depends_on(validation, 1)
    env.schedule([validation, after])
    env.run_until_idle()
    result = env.event_log[-2].metadata.return_value
    assert isinstance(result, ValidationResult) and result.success
    assert env.event_log[-2].event_time == 4 and times(env)[-1] == ("after", 5)
    assert env.state is EnvironmentState.RUNNING


def test_validation_fails_the_environment_on_a_minefield() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])

    def too_much(e: AbstractEnvironment) -> bool:
        return counter_total(e) > 1

    env.schedule([Event.from_function(app.add, amount=2).delayed(3)])
    env.schedule(ValidationEvent(milestones=[lambda e: False], minefields=[too_much]))
    env.schedule(Event.from_function(app.add, amount=1).delayed(20))
    env.run_until_idle()
    assert env.state is EnvironmentState.FAILED
    result = env.event_log[-1].metadata.return_value
    assert isinstance(result, ValidationResult) and not result.success
    assert result.triggered_minefields == [too_much] and "too_much" in result.message
    assert app.total == 2, "nothing runs after the failure"


def test_validation_fails_on_timeout_naming_the_missing_milestones() -> None:
    env = make_env()

    def never_reached(e: AbstractEnvironment) -> bool:
        return False

    env.schedule(ValidationEvent(milestones=[never_reached], timeout=3))
    env.run_until_idle()
    result = env.event_log[-1].metadata.return_value
    assert env.state is EnvironmentState.FAILED and env.event_log[-1].event_time == 3
    assert isinstance(result, ValidationResult) and result.failed_milestones == [never_reached]


# ------------------------------------------------------------------- oracle


class OracleScenario(Scenario):
    scenario_id = "oracle"

    def init_and_populate_apps(self) -> None:
        self.apps = [CounterApp(), AgentUserInterface()]

    def build_events_flow(self) -> None:
        app = self.get_typed_app(CounterApp)
        aui = self.get_typed_app(AgentUserInterface)
        with EventRegisterer.capture_mode():
            ask = aui.send_message_to_agent(content="add two").depends_on(None, 1)
            oracle = app.add(2).oracle().with_id("oracle").depends_on(ask, 2)
            reply = aui.send_message_to_agent(content="thanks").depends_on(oracle, 1)
        self.events = [ask, oracle, reply]


def test_oracle_events_run_as_agent_events_in_oracle_mode() -> None:
    env = make_env(oracle_mode=True, exit_when_no_events=True)
    env.run(OracleScenario())
    types = [(e.event_type, e.event_time) for e in env.event_log]
    assert types == [(EventType.USER, 1), (EventType.AGENT, 3), (EventType.USER, 4)]
    oracle_record = env.event_log[1]
    assert isinstance(oracle_record, CompletedOracleEvent)
    assert oracle_record.event_id == "oracle" and oracle_record.metadata.return_value == 2


def test_outside_oracle_mode_oracles_and_their_dependants_never_run() -> None:
    env = make_env(exit_when_no_events=True)
    env.run(OracleScenario())
    assert [e.get_args() for e in env.event_log] == [{"content": "add two"}]


def test_oracle_mode_dumps_the_final_state(tmp_path: Path) -> None:
    env = make_env(oracle_mode=True, exit_when_no_events=True, dump_dir=str(tmp_path))
    env.run(OracleScenario())
    dumped = json.loads((tmp_path / "environment_state.json").read_text())
    assert dumped["apps"]["CounterApp"] == {"total": 2}
    assert [e["event_type"] for e in dumped["event_log"]] == ["USER", "AGENT", "USER"]


def test_oracle_dump_replaces_an_earlier_dump_whole(tmp_path: Path) -> None:
    (tmp_path / "environment_state.json").write_text("an earlier run's dump")
    env = make_env(oracle_mode=True, exit_when_no_events=True, dump_dir=str(tmp_path))
    env.run(OracleScenario())
    dumped = json.loads((tmp_path / "environment_state.json").read_text())
    assert dumped["apps"]["CounterApp"] == {"total": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["environment_state.json"]


def test_a_failed_atomic_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "out" / "state.json"
    write_text_atomically(str(path), "old")
    assert path.read_text() == "old"
    # A lone surrogate cannot be encoded as UTF-8: the write fails part-way through.
    with pytest.raises(UnicodeEncodeError):
        write_text_atomically(str(path), "x" * 100_000 + "\ud800")
    assert path.read_text() == "old"
    assert [p.name for p in path.parent.iterdir()] == ["state.json"]


def test_an_atomic_write_makes_a_readable_file_and_keeps_a_replaced_files_mode(
    tmp_path: Path,
) -> None:
    fresh, kept = tmp_path / "fresh.json", tmp_path / "kept.json"
    write_text_atomically(str(fresh), "{}")
    assert fresh.stat().st_mode & 0o777 == 0o644
    kept.write_text("old")
    kept.chmod(0o600)
    write_text_atomically(str(kept), "new")
    assert (kept.read_text(), kept.stat().st_mode & 0o777) == ("new", 0o600)


# ------------------------------------------------------ stop, placeholders, hooks


def test_stop_event_stops_the_environment() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    env.schedule([StopEvent().delayed(2), Event.from_function(app.add, amount=1).delayed(3)])
    env.run_until_idle()
    assert env.state is EnvironmentState.STOPPED and app.total == 0
    assert [e.event_type for e in env.event_log] == [EventType.STOP]
    assert not env.step()


def test_placeholders_resolve_to_past_return_values() -> None:
    class Echo(CounterApp):
        def __init__(self) -> None:
            super().__init__("Echo")

    app, echo = CounterApp(), Echo()
    env = make_env()
    env.register_apps([app, echo])
    first = Event.from_function(app.add, amount=5).with_id("first")
    profile = Event.from_function(lambda: {"user": {"age": 7}}).with_id("profile")
    whole = Event.from_function(app.add, amount="{{first}}").depends_on(first, 1)
    nested = Event.from_function(echo.add, amount="{{ profile.user.age }}").depends_on(profile)
    text = Event.from_function(lambda note: note, note="total={{first}}!").depends_on(first, 2)
    env.schedule([first, profile, whole, nested, text])
    env.run_until_idle()
    assert app.total == 10 and echo.total == 7
    assert env.event_log[-1].metadata.return_value == "total=5!"
    assert whole.action is not None and whole.action.args == {"amount": "{{first}}"}
    assert env.event_log.get(whole.event_id).get_args() == {"amount": 5}  # type: ignore[union-attr]


def test_placeholder_to_an_event_that_did_not_complete_fails_loudly() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    env.schedule(Event.from_function(app.add, amount="{{missing.key}}"))
    with pytest.raises(KeyError, match="missing"):
        env.run_until_idle()
    assert env.state is EnvironmentState.FAILED and isinstance(env.exception, KeyError)


def test_listeners_see_every_completed_event_in_log_order() -> None:
    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    seen: list[CompletedEvent] = []
    env.add_completed_event_listener(seen.append)
    env.schedule([Event.from_function(app.add, amount=1).delayed(t) for t in (1, 2)])
    env.run_until_idle()
    app.add(1)  # agent call
    assert seen == env.event_log.list_view() and len(seen) == 3
    env.remove_completed_event_listener(seen.append)
    app.add(1)
    assert len(seen) == 3


def test_environments_side_by_side_do_not_share_state() -> None:
    first, second = make_env(), make_env()
    apps = [CounterApp(), CounterApp()]
    first.register_apps([apps[0]])
    second.register_apps([apps[1]])
    first.schedule(Event.from_function(apps[0].add, amount=1).delayed(4))
    first.run_until_idle()
    apps[1].add(1)
    assert [e.event_type for e in first.event_log] == [EventType.ENV]
    assert [e.event_type for e in second.event_log] == [EventType.AGENT]
    assert second.event_log[0].event_time == 0


def test_one_scenario_runs_identically_in_two_environments() -> None:
    scenario = OracleScenario()
    logs = []
    for _ in range(2):
        scenario.soft_reset()
        env = make_env(oracle_mode=True, exit_when_no_events=True)
        env.run(scenario)
        logs.append(json.dumps(env.event_log.to_dict()))
    assert logs[0] == logs[1]


def test_register_apps_rejects_a_second_app_with_the_same_name() -> None:
    env = make_env()
    env.register_apps([CounterApp()])
    with pytest.raises(ValueError, match="already registered"):
        env.register_apps([CounterApp()])
    with pytest.raises(KeyError, match="registered: CounterApp"):
        env.get_app("Nope")


def test_notification_timeout_wakes_the_queue_and_fires_only_in_a_quiet_tick() -> None:
    aui = AgentUserInterface()
    env = make_env()
    env.register_apps([aui])
    ns = env.notification_system
    ns.set_wait_timeout(5)
    env.schedule(Event.from_function(aui.send_message_to_agent, content="hi").delayed(5))
    env.run_until_idle()
    messages = ns.message_queue.list_view()
    assert [m.message_type for m in messages] == [MessageType.USER_MESSAGE]
    ns.set_wait_timeout(8)
    env.run_until_idle()
    (timeout,) = ns.message_queue.get_by_timestamp(messages[0].timestamp.replace(year=2100))[1:]
    assert timeout.message == "Wait for notification timed out." and env.current_time == 8


# ------------------------------------------------------------- event kinds


def test_a_subclass_of_an_event_kind_runs_as_that_kind() -> None:
    class LabelledEvent(Event):
        pass

    class EarlyStop(StopEvent):
        pass

    app = CounterApp()
    env = make_env()
    env.register_apps([app])
    labelled = LabelledEvent(action=Event.from_function(app.add, amount=2).action).delayed(1)
    env.schedule(
        [labelled, EarlyStop().delayed(2), Event.from_function(app.add, amount=1).delayed(3)]
    )
    env.run_until_idle()
    assert app.total == 2 and env.state is EnvironmentState.STOPPED
    assert [e.event_type for e in env.event_log] == [EventType.ENV, EventType.STOP]


def test_an_event_of_no_known_kind_fails_the_environment_naming_its_type() -> None:
    class Unknown(AbstractEvent):
        pass

    env = make_env()
    env.schedule(Unknown().delayed(1))
    with pytest.raises(TypeError, match="cannot process an event of type Unknown"):
        env.run_until_idle()
    assert env.state is EnvironmentState.FAILED and isinstance(env.exception, TypeError)


def test_only_the_evaluation_that_held_is_logged_when_asked() -> None:
    app = CounterApp()
    env = make_env(log_every_condition_check=False)
    env.register_apps([app])
    bump = Event.from_function(app.add, amount=1).with_id("bump").delayed(3)
    check = ConditionCheckEvent.from_condition(lambda e: counter_total(e) >= 1).with_id("check")
    env.schedule([bump, check])
    env.run_until_idle()
    assert times(env) == [("bump", 3), ("check", 3)]
