"""The kernel's logs of seeded random scenarios, as JSON: to compare two versions.

Each scenario mixes plain calls, failing calls, placeholders, user messages, condition
checks, stop events, absolute and relative times and dependencies; some have a listener,
a duration or a notified tool. Each is run four ways (``run_until_idle``, the thread
driver, ``run_until`` then ``run_until_idle``, and ``step()``), and what is printed is the
log (``to_dict()``, stack-trace text masked: it names source lines), the notifications,
the final state, time and error, and ``get()`` of every event id.

Run under each version and compare:
``PYTHONPATH=<old> python benchmarks/kernel_logs.py 300 > old.json``, the same with the
new one, then ``cmp old.json new.json``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "simulation"))

from _kernel_apps import AgentUserInterface, CounterApp

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.environment import Environment, EnvironmentConfig
from sotopia_are.simulation.ids import id_namespace
from sotopia_are.simulation.notification_system import (
    BaseNotificationSystem,
    NotificationSystemConfig,
)
from sotopia_are.simulation.types import (
    AbstractEvent,
    ConditionCheckEvent,
    Event,
    EventType,
    StopEvent,
)


def scenario(seed: int) -> tuple[CounterApp, list[App], list[AbstractEvent]]:
    """The apps and events of scenario ``seed``."""
    rng = random.Random(seed)
    app, ui = CounterApp(), AgentUserInterface()
    events: list[AbstractEvent] = []
    for index in range(rng.randint(1, 40)):
        kind = rng.random()
        event: AbstractEvent
        if kind < 0.6:
            event = Event.from_function(app.add, amount=rng.randint(1, 3))
        elif kind < 0.68:
            event = Event.from_function(app.fail, reason="boom")
        elif kind < 0.76 and events:
            referred = rng.choice(events)
            event = Event.from_function(
                ui.send_message_to_agent, content=f"hi {{{{{referred.event_id}}}}}"
            ).depends_on(referred, rng.randint(0, 3))
        elif kind < 0.84:
            event = Event.from_function(ui.send_message_to_agent, content=f"msg{index}")
        elif kind < 0.9:
            target = rng.randint(1, 30)
            event = ConditionCheckEvent.from_condition(
                lambda _, target=target: app.total >= target,
                every_tick=rng.randint(1, 3),
                timeout=rng.choice([None, 5, 20]),
            )
        elif kind < 0.95:
            event = Event.from_function(app.roll)
        else:
            event = Event.from_function(app.read)
        if rng.random() < 0.3:
            event.with_type(rng.choice([EventType.ENV, EventType.AGENT, EventType.USER]))
        if events and rng.random() < 0.4 and not event.dependencies:
            parents = rng.sample(events, k=min(len(events), rng.randint(1, 3)))
            event.depends_on(parents, rng.randint(0, 4))
        elif rng.random() < 0.3:
            event.at_absolute_time(rng.choice([rng.randint(0, 20), float(rng.randint(0, 20))]))
        elif not event.dependencies:
            event.delayed(rng.choice([0, 1, 2, 2.5, rng.randint(0, 30)]))
        events.append(event)
    if rng.random() < 0.2:
        events.append(StopEvent().delayed(rng.randint(5, 40)))
    return app, [app, ui], events


def run(seed: int, mode: str) -> dict[str, Any]:
    """Scenario ``seed`` run by ``mode``: what it left."""
    with id_namespace(f"x{seed}"):
        counter, apps, events = scenario(seed)
        tools = {"CounterApp": ["fail"]} if seed % 3 == 0 else {}
        env = Environment(
            EnvironmentConfig(
                queue_based_loop=True,
                duration=None if seed % 4 else 25,
                exit_when_no_events=True,
                verbose=False,
            ),
            notification_system=BaseNotificationSystem(NotificationSystemConfig(tools)),
        )
        heard: list[str] = []
        if seed % 5 == 0:
            env.add_completed_event_listener(lambda event: heard.append(event.event_id))
        env.register_apps(apps)
        order = list(events)
        random.Random(seed).shuffle(order)
        env.schedule(order)
        error = None
        try:
            if mode == "idle":
                env.run_until_idle()
            elif mode == "thread":
                env.start()
                env.join(10)
            elif mode == "until":
                env.run_until(15)
                env.run_until_idle()
            else:
                for _ in range(200):
                    if not env.step():
                        break
        except Exception as caught:
            error = repr(caught)
        log = env.event_log.to_dict()
        for record in log:
            if record["metadata"].get("exception_stack_trace"):
                record["metadata"]["exception_stack_trace"] = "<trace>"
        messages = env.notification_system.message_queue.list_view()
        latest = env.get_latest_event()
        return {
            "error": error,
            "exception": repr(env.exception),
            "log": log,
            "messages": [
                (m.message_type.value, m.message, m.timestamp.isoformat(), m.event_id)
                for m in messages
            ],
            "heard": heard,
            "state": env.state.value,
            "total": counter.total,
            "time": env.current_time,
            "latest": None if latest is None else latest.event_id,
            "get": [
                getattr(env.event_log.get(event.event_id), "event_time", None) for event in events
            ],
        }


def main(count: int) -> None:
    runs = {
        f"{seed}-{mode}": run(seed, mode)
        for seed in range(count)
        for mode in ("idle", "thread", "until", "step")
    }
    print(json.dumps(runs, default=repr, sort_keys=True))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
