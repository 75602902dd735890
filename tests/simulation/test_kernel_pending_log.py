"""Laws of the kernel's fast path: pending log records read as the records made at once,
the queue pops in (time, priority, arrival) order, and a run makes no object per event
for the garbage collector until its log is read."""

from __future__ import annotations

import contextlib
import contextvars
import copy
import gc
import itertools
import pickle
import threading
from collections.abc import Callable

from _kernel_apps import AgentUserInterface, CounterApp, Reminder, ReminderApp
from hypothesis import given, settings
from hypothesis import strategies as st

from sotopia_are.simulation import environment as environment_module
from sotopia_are.simulation.environment import Environment, EnvironmentConfig
from sotopia_are.simulation.event_log import EventLog
from sotopia_are.simulation.event_queue import PRIORITY, EventQueue
from sotopia_are.simulation.ids import id_namespace
from sotopia_are.simulation.scenarios.scenario import Scenario
from sotopia_are.simulation.types import (
    AbstractEvent,
    Action,
    CompletedEvent,
    ConditionCheckEvent,
    Event,
    EventRegisterer,
    EventType,
    StopEvent,
    ValidationEvent,
    current_event,
    disable_events,
    event_registered,
)

# Each node: (kind, parents as indices of earlier nodes, delay, absolute time or None).
KINDS = ("add", "fail", "message", "placeholder", "roll")
nodes = st.integers(min_value=1, max_value=20).flatmap(
    lambda n: st.tuples(
        *[
            st.tuples(
                st.sampled_from(KINDS if i else KINDS[:3]),
                st.lists(st.integers(0, max(i - 1, 0)), max_size=2 if i else 0, unique=True),
                st.integers(0, 3),
                st.one_of(st.none(), st.integers(0, 10), st.floats(0, 10)),
            )
            for i in range(n)
        ]
    )
)


def run(
    dag: tuple[tuple[str, list[int], int, float | None], ...],
    listen: bool,
    steps_per_slice: int | None = None,
    wait_until: float | None = None,
    verbose: bool = False,
    reminders: bool = False,
) -> list[dict[str, object]]:
    """The log of ``dag`` and then what was notified; with ``listen``, a listener makes
    every record at once; with ``steps_per_slice``, run by the thread driver taking
    that many steps per slice; with ``wait_until``, a wait times out then unless
    something is notified first; ``verbose`` takes the loop one step at a time; with
    ``reminders``, a reminder app is polled each tick."""
    with id_namespace("pending-log"):
        app, ui = CounterApp(), AgentUserInterface()
        todo = ReminderApp([Reminder("a", 0.0), Reminder("b", 2.5), Reminder("c", 6.0)])
        events: list[Event] = []
        for kind, parents, delay, absolute in dag:
            if kind == "add":
                event = Event.from_function(app.add, amount=2)
            elif kind == "fail":
                event = Event.from_function(app.fail, reason="no")
            elif kind == "message":
                event = Event.from_function(ui.send_message_to_agent, content="hello")
            elif kind == "roll":
                event = Event.from_function(app.roll)
            else:
                referred = events[parents[0]] if parents else events[-1]
                event = Event.from_function(
                    ui.send_message_to_agent, content=f"got {{{{{referred.event_id}}}}}"
                )
                parents = sorted({*parents, events.index(referred)})
            event.depends_on([events[p] for p in parents] or None, delay_seconds=delay)
            if absolute is not None and not parents:
                event.at_absolute_time(absolute)
            events.append(event)
        env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None, verbose=verbose))
        if listen:
            env.add_completed_event_listener(lambda _: None)
        env.register_apps([app, ui, todo] if reminders else [app, ui])
        env.schedule(list(reversed(events)))
        if not verbose:
            # The fast path's gate (EnvironmentCore._run_live): a slice test on the slow
            # path on both sides would prove nothing.
            assert env.time_manager.virtual and env._closes_by_base
            assert not env._opens_every_tick
        if wait_until is not None:
            env.notification_system.set_wait_timeout(wait_until)
        if steps_per_slice is None:
            env.run_until_idle()
        else:
            _run_in_slices(env, steps_per_slice)
        log = env.event_log
        assert [log.get(e.event_id) for e in events] == [
            next(r for r in reversed(log.list_view()) if r.event_id == e.event_id) for e in events
        ]
        assert all(log[i] is record for i, record in enumerate(log))
        for record in log:
            if record.metadata.exception_stack_trace is not None:
                record.metadata.exception_stack_trace = "<trace>"
        messages = [
            {"notified": [m.message_type.value, m.message, m.timestamp.isoformat()]}
            for m in env.notification_system.message_queue.list_view()
        ]
        return log.to_dict() + messages


@settings(max_examples=60, deadline=None)
@given(nodes)
def test_pending_records_read_as_records_made_at_once(
    dag: tuple[tuple[str, list[int], int, float | None], ...],
) -> None:
    assert run(dag, listen=False) == run(dag, listen=True)


@settings(max_examples=60, deadline=None)
@given(nodes, st.integers(1, 4), st.one_of(st.none(), st.integers(0, 12)), st.booleans())
def test_the_thread_drivers_slices_run_as_one_loop(
    dag: tuple[tuple[str, list[int], int, float | None], ...],
    steps_per_slice: int,
    wait_until: int | None,
    reminders: bool,
) -> None:
    """The queue loop in slices of any size (it pops each tick's first event with the
    last event of the tick before, within a slice) gives the log and notifications of
    the loop taken one step at a time (``verbose``), with or without a wait pending or a
    reminder app."""
    stepped = run(dag, False, 1000, wait_until, verbose=True, reminders=reminders)
    assert run(dag, False, steps_per_slice, wait_until, reminders=reminders) == stepped


def _run_in_slices(env: Environment, steps_per_slice: int) -> None:
    """The thread driver's run of what ``env`` has scheduled, ``steps_per_slice`` steps
    a slice."""
    slices = environment_module._STEPS_PER_LOCK
    environment_module._STEPS_PER_LOCK = steps_per_slice
    try:
        env.run(Scenario(scenario_id="slices"), schedule_events=False)
    finally:
        environment_module._STEPS_PER_LOCK = slices


def test_a_record_keeps_the_event_as_it_was_when_it_ran() -> None:
    app = CounterApp()
    first = Event.from_function(app.add, amount=1).with_id("first")
    second = Event.from_function(app.add, amount=1).with_id("second").depends_on(first, 2)
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None))
    env.register_apps([app])
    env.schedule([first, second])
    env.run_until_idle()
    # Changed after the run, before anything read the log.
    second.with_id("renamed").with_type(EventType.AGENT).delayed(9)
    second.dependencies.append(Event.from_function(app.read))
    record = env.event_log[1]
    assert (record.event_id, record.event_type, record.event_relative_time) == (
        "second",
        EventType.ENV,
        2,
    )
    assert [d.event_id for d in record.dependencies] == ["first"]
    assert record.dependencies is not second.dependencies
    assert env.event_log.get("second") is record and env.event_log.get("renamed") is None


def test_the_log_reads_like_a_list() -> None:
    app = CounterApp()
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None))
    env.register_apps([app])
    env.schedule([Event.from_function(app.add, amount=i).delayed(i) for i in range(6)])
    env.run_until_idle()
    log = env.event_log
    records = log.list_view()
    assert [r.metadata.return_value for r in records] == [0, 1, 3, 6, 10, 15]
    assert log[-1] is records[-1] and log[::-2] == records[::-2] and log[1:3] == records[1:3]
    assert len(log) == 6 and list(log) == records
    for index in (6, -7):
        try:
            log[index]
        except IndexError:
            continue
        raise AssertionError(f"log[{index}] did not raise IndexError")
    log.reset()
    assert len(log) == 0 and log.list_view() == [] and log.get(records[0].event_id) is None


def test_a_log_with_pending_records_copies_and_pickles_as_its_records() -> None:
    log = EventLog()
    events = [Event(action=Action(function=abs, args={"x": -i})) for i in range(3)]
    for time, event in enumerate(events):
        log.put_ran(event, float(time), time)
    copied, pickled = copy.deepcopy(log), pickle.loads(pickle.dumps(log))
    assert copied.to_dict() == pickled.to_dict() == log.to_dict()
    assert [r.metadata.return_value for r in pickled] == [0, 1, 2]
    assert pickled.get(events[1].event_id).event_time == 1.0  # type: ignore[union-attr]
    pickled.put_ran(events[0], 5.0, 0)
    assert len(pickled) == 4 and len(log) == 3


def test_readers_in_other_threads_see_every_record_once_made() -> None:
    """One writer logs pending records while readers make and read them: no reader sees a
    hole, and all see the same record objects."""
    app = CounterApp()
    events = [Event.from_function(app.read) for _ in range(3000)]
    log = EventLog()
    seen: list[list[CompletedEvent]] = []
    done = threading.Event()

    holes: list[str] = []

    def read() -> None:
        # Failures are collected: an assertion in a thread would not fail the test.
        while not done.is_set():
            snapshot = log.list_view()
            if not all(isinstance(r, CompletedEvent) for r in snapshot):
                holes.append("list_view")
            if not all(isinstance(r, CompletedEvent) for r in log):
                holes.append("iteration")
            if snapshot and log.get(snapshot[-1].event_id) is None:
                holes.append("get")
            seen.append(snapshot)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for reader in readers:
        reader.start()
    try:
        for time, event in enumerate(events):
            log.put_ran(event, float(time), time)
    finally:
        done.set()
        for reader in readers:
            reader.join()
    assert holes == [] and seen
    final = log.list_view()
    assert [r.event_id for r in final] == [e.event_id for e in events]
    assert [r.metadata.return_value for r in final] == list(range(3000))
    for snapshot in seen:
        assert all(a is b for a, b in zip(snapshot, final, strict=False))


# One queued entry: (due, kind of event, keeps the run alive).
entries = st.lists(
    st.tuples(
        st.sampled_from([0.0, 1.0, 1.5, 2.0, 7.0]),
        st.sampled_from([EventType.ENV, EventType.AGENT, EventType.CONDITION, EventType.STOP]),
        st.booleans(),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(entries, entries, st.sampled_from([0.0, 1.0, 2.0, 10.0]))
def test_the_queue_pops_in_time_priority_arrival_order(
    first: list[tuple[float, EventType, bool]],
    second: list[tuple[float, EventType, bool]],
    now: float,
) -> None:
    """Entries put in any order (some after pops) come out sorted by (due, priority,
    arrival), with the live count and peeks consistent."""
    queue = EventQueue()
    queued: list[tuple[float, int, int, AbstractEvent, bool]] = []
    arrivals = itertools.count()

    def put(batch: list[tuple[float, EventType, bool]]) -> None:
        for due, kind, alive in batch:
            event = AbstractEvent(event_type=kind)
            queue.put(event, due, alive)
            queued.append((due, PRIORITY[kind], next(arrivals), event, alive))

    def expect_order() -> list[tuple[float, AbstractEvent]]:
        return [(q[0], q[3]) for q in sorted(queued, key=lambda q: q[:3])]

    put(first)
    assert queue.list_view() == expect_order()
    popped: list[tuple[float, AbstractEvent]] = []
    while (entry := queue.pop_due(now)) is not None:
        popped.append(entry)
    assert popped == expect_order()[: len(popped)]
    assert all(due <= now for due, _ in popped)
    gone = {id(event) for _, event in popped}
    queued[:] = [q for q in queued if id(q[3]) not in gone]
    put(second)
    order = expect_order()
    assert len(queue) == len(order)
    assert queue.has_live_events() == any(q[4] for q in queued)
    assert queue.peek() == (order[0] if order else None)
    assert queue.peek_time_if_live() == (order[0][0] if order and queue.has_live_events() else None)
    assert [queue.pop() for _ in order] == order
    assert queue.peek_time() is None and not queue.has_live_events()


def test_a_run_leaves_nothing_per_event_for_the_collector_until_its_log_is_read() -> None:
    app = CounterApp()
    count = 5000
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None))
    env.register_apps([app])
    events = [Event.from_function(app.add, amount=1).delayed(i % 50) for i in range(count)]
    gc.collect()
    before = len(gc.get_objects())
    env.schedule(events)
    env.run_until_idle()
    gc.collect()
    assert len(gc.get_objects()) - before < count // 20
    assert len(env.event_log) == count and app.total == count
    env.event_log.list_view()
    gc.collect()
    assert len(gc.get_objects()) - before > count


class Probe(CounterApp):
    """Records which event each call ran under."""

    def __init__(self) -> None:
        super().__init__()
        self.owners: list[AbstractEvent | None] = []

    @event_registered()
    def probe(self, label: str) -> str:
        self.owners.append(current_event())
        self.read()
        return label


def test_a_registered_method_runs_as_part_of_its_event() -> None:
    """Called by the kernel without its wrapper, a registered method still runs under its
    event: nested registered calls are part of it, and none is logged on its own."""
    app = Probe()
    events = [Event.from_function(app.probe, label=f"p{i}").delayed(i) for i in range(3)]
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None))
    env.register_apps([app])
    env.schedule(events)
    env.run_until_idle()
    assert app.owners == events
    assert [r.event_id for r in env.event_log] == [e.event_id for e in events]
    assert current_event() is None
    app.probe("agent")  # an agent's own call is logged, as before
    assert len(env.event_log) == 4 and env.event_log[-1].event_type is EventType.AGENT


def test_calls_between_events_are_under_the_state_the_loop_started_in() -> None:
    """Each event owns the calls its action makes, and a call made between events (a completed-event
    listener's) is under the state the loop started in, logged as an agent's own
    outside any block and not logged in disable_events(); afterwards the state is as
    before."""
    for suppressed in (False, True):
        app = Probe()
        env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None))
        env.register_apps([app])
        events = [Event.from_function(app.probe, label=f"p{i}").delayed(i) for i in range(3)]
        between: list[AbstractEvent | None] = []
        env.add_completed_event_listener(_reading_listener(app, between))
        env.schedule(events)
        with disable_events() if suppressed else contextlib.nullcontext():
            env.run_until_idle()
            assert EventRegisterer.is_capture_mode() is False
        assert app.owners == events and between == [None] * 3
        kinds = [record.event_type for record in env.event_log]
        assert kinds == [EventType.ENV] * 3 if suppressed else [EventType.ENV, EventType.AGENT] * 3
        assert current_event() is None


class Spawner(Probe):
    """Copies its context in each call (as starting a task or thread there does) and, in
    each call, runs :meth:`probe` in the context the call before copied."""

    def __init__(self) -> None:
        super().__init__()
        self.contexts: list[contextvars.Context] = []

    @event_registered()
    def spawn(self, label: str) -> str:
        if self.contexts:
            self.contexts[-1].run(self.probe, f"late {label}")
        self.contexts.append(contextvars.copy_context())
        return label


def test_a_context_copied_in_an_action_stays_with_its_event() -> None:
    """A context copied inside an action keeps that event as the current one: a
    registered call run in it later (in the next event's action, within the slice or in
    the next, or after the run) is part of the event that copied it and is not logged,
    whether the loop runs in slices of one step or of many, by the fast path or one step
    at a time (``verbose``)."""
    for verbose, steps_per_slice in itertools.product((False, True), (1, 2, 1000)):
        with id_namespace("copied-context"):
            app = Spawner()
            env = Environment(
                EnvironmentConfig(queue_based_loop=True, duration=None, verbose=verbose)
            )
            env.register_apps([app])
            events = [Event.from_function(app.spawn, label=f"s{i}").delayed(i) for i in range(4)]
            env.schedule(events)
            _run_in_slices(env, steps_per_slice)
            assert app.owners == events[:-1], (verbose, steps_per_slice)
            for context, event in zip(app.contexts, events, strict=True):
                app.owners.clear()
                context.run(app.probe, "after")
                assert app.owners == [event], (verbose, steps_per_slice)
            assert [r.event_id for r in env.event_log] == [e.event_id for e in events]
            assert current_event() is None


def _reading_listener(
    app: Probe, seen: list[AbstractEvent | None]
) -> Callable[[CompletedEvent], None]:
    """A listener noting the current event after each ENV record and calling ``app``."""

    def listener(record: CompletedEvent) -> None:
        if record.event_type is EventType.ENV:
            seen.append(current_event())
            app.read()

    return listener


def test_checks_and_stops_still_run_by_their_kind() -> None:
    app = CounterApp()
    env = Environment(EnvironmentConfig(queue_based_loop=True, duration=None))
    env.register_apps([app])
    add = Event.from_function(app.add, amount=5).delayed(1)
    check = ConditionCheckEvent.from_condition(lambda _: app.total >= 5)
    after = Event.from_function(app.add, amount=1).depends_on(check, 1)
    validation = ValidationEvent(milestones=[lambda _: app.total >= 6]).depends_on(after)
    stop = StopEvent().depends_on(validation, 1)
    env.schedule([add, check, after, validation, stop])
    env.run_until_idle()
    # A failed check is logged too (its first look, at 0), as ARE logs it.
    assert [(r.event_type.value, r.event_time) for r in env.event_log] == [
        ("CONDITION", 0),
        ("ENV", 1),
        ("CONDITION", 1),
        ("ENV", 2),
        ("VALIDATION", 2),
        ("STOP", 3),
    ]
    assert [r.metadata.return_value for r in env.event_log][:4] == [False, 5, True, 6]
    assert env.state.value == "STOPPED"
