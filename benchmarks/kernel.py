"""Event-kernel throughput: N ``event_registered`` app calls through the queue-based loop.

Three shapes: independent times (event i at t=i), all at one time, and a dependency chain
(each event 1 s after the previous completed). Three drivers: the thread driver,
``Environment.run(scenario)`` (registering apps, scheduling, the background thread, its
lock and every event); the core alone, stepped from this thread with no lock
(registering apps, ``schedule`` and ``run_until_idle``); and ``core+read``, the core and
then reading the whole log (``event_log.list_view()``), which makes every record the run
left pending. Building the events is not timed.

Run: ``python benchmarks/kernel.py [--cpu] [--runs R] [--shapes ...] [--drivers ...]
[N ...]`` — events per second, best of R runs (default 5), timed by the wall clock or,
with ``--cpu``, by this process's CPU time (steadier on a shared machine). ``--once SHAPE
DRIVER N`` runs one measurement and prints nothing else, for an instruction counter
(``DRIVER`` ``none`` only builds the events, to subtract):
``valgrind --tool=callgrind python benchmarks/kernel.py --once chain core 10000``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.environment import Environment, EnvironmentConfig
from sotopia_are.simulation.scenarios.scenario import Scenario
from sotopia_are.simulation.types import AbstractEvent, Event, OperationType, event_registered


class CounterApp(App):
    """The smallest stateful app: one counter."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    @event_registered(operation_type=OperationType.WRITE)
    def add(self, amount: int) -> int:
        self.total += amount
        return self.total


def independent(app: CounterApp, n: int) -> list[AbstractEvent]:
    return [Event.from_function(app.add, amount=1).delayed(i) for i in range(n)]


def same_time(app: CounterApp, n: int) -> list[AbstractEvent]:
    return [Event.from_function(app.add, amount=1).delayed(5) for _ in range(n)]


def chain(app: CounterApp, n: int) -> list[AbstractEvent]:
    events: list[AbstractEvent] = [Event.from_function(app.add, amount=1)]
    for _ in range(n - 1):
        events.append(Event.from_function(app.add, amount=1).depends_on(events[-1], 1))
    return events


SHAPES: dict[str, Callable[[CounterApp, int], list[AbstractEvent]]] = {
    "independent times": independent,
    "all at one time": same_time,
    "dependency chain": chain,
}
SHAPE_KEYS = {
    "independent": "independent times",
    "same": "all at one time",
    "chain": "dependency chain",
}


def thread_driver(env: Environment, scenario: Scenario) -> None:
    env.run(scenario)


def core_alone(env: Environment, scenario: Scenario) -> None:
    scenario.initialize()
    env.register_apps(scenario.apps or [])
    env.schedule(scenario.events)
    env.run_until_idle()


def core_then_read(env: Environment, scenario: Scenario) -> None:
    core_alone(env, scenario)
    env.event_log.list_view()


DRIVERS: dict[str, Callable[[Environment, Scenario], None]] = {
    "thread": thread_driver,
    "core": core_alone,
    "core+read": core_then_read,
}


def measure(
    shape: Callable[[CounterApp, int], list[AbstractEvent]],
    driver: Callable[[Environment, Scenario], None] | None,
    n: int,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Events per second for one run of ``n`` events (no driver: build them only, 0.0)."""
    app = CounterApp()
    scenario = Scenario(scenario_id="bench", apps=[app], events=shape(app, n))
    env = Environment(
        EnvironmentConfig(
            duration=None, queue_based_loop=True, exit_when_no_events=True, verbose=False
        )
    )
    if driver is None:
        return 0.0
    started = clock()
    driver(env, scenario)
    elapsed = clock() - started
    if len(env.event_log) != n or app.total != n:
        raise RuntimeError(f"expected {n} events, logged {len(env.event_log)}")
    return n / elapsed


def main(
    sizes: list[int],
    clock: Callable[[], float],
    runs: int = 5,
    shapes: list[str] | None = None,
    drivers: list[str] | None = None,
) -> None:
    print("| shape | driver | " + " | ".join(f"N={n:,}" for n in sizes) + " |")
    print("|---|---|" + "---:|" * len(sizes))
    for key in shapes or list(SHAPE_KEYS):
        name = SHAPE_KEYS[key]
        for driver_name in drivers or list(DRIVERS):
            driver = DRIVERS[driver_name]
            rates = [
                max(measure(SHAPES[name], driver, n, clock) for _ in range(runs)) for n in sizes
            ]
            cells = " | ".join(f"{rate:,.0f}" for rate in rates)
            print(f"| {name} | {driver_name} | {cells} |", flush=True)
    timed_by = "CPU time" if clock is time.process_time else "wall clock"
    print(f"\nevents/s, best of {runs} runs, {timed_by}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1_000, 10_000, 100_000])
    parser.add_argument("--cpu", action="store_true", help="time by process CPU time")
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (the best counts)")
    parser.add_argument(
        "--shapes", type=lambda v: v.split(","), help=f"comma-separated of {','.join(SHAPE_KEYS)}"
    )
    parser.add_argument(
        "--drivers", type=lambda v: v.split(","), help=f"comma-separated of {','.join(DRIVERS)}"
    )
    parser.add_argument("--once", nargs=3, metavar=("SHAPE", "DRIVER", "N"))
    args = parser.parse_args()
    if args.once:
        shape_key, driver_name, n = args.once
        measure(SHAPES[SHAPE_KEYS[shape_key]], DRIVERS.get(driver_name), int(n))
    else:
        clock = time.process_time if args.cpu else time.perf_counter
        main(args.sizes, clock, args.runs, args.shapes, args.drivers)
