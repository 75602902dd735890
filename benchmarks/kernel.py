"""Event-kernel throughput: N ``event_registered`` app calls through the queue-based loop.

Three shapes: independent times (event i at t=i), all at one time, and a dependency chain
(each event 1 s after the previous completed). Timed: ``Environment.run(scenario)`` —
registering apps, scheduling, the background thread and every event — not building the
events. Run: ``python benchmarks/kernel.py [N ...]``.
"""

from __future__ import annotations

import sys
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


def measure(shape: Callable[[CounterApp, int], list[AbstractEvent]], n: int) -> float:
    """Events per second for one run of ``n`` events."""
    app = CounterApp()
    scenario = Scenario(scenario_id="bench", apps=[app], events=shape(app, n))
    env = Environment(
        EnvironmentConfig(
            duration=None, queue_based_loop=True, exit_when_no_events=True, verbose=False
        )
    )
    started = time.perf_counter()
    env.run(scenario)
    elapsed = time.perf_counter() - started
    if len(env.event_log) != n or app.total != n:
        raise RuntimeError(f"expected {n} events, logged {len(env.event_log)}")
    return n / elapsed


def main(sizes: list[int]) -> None:
    print("| shape | " + " | ".join(f"N={n:,}" for n in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for name, shape in SHAPES.items():
        rates = [max(measure(shape, n) for _ in range(5)) for n in sizes]
        print(f"| {name} | " + " | ".join(f"{rate:,.0f}" for rate in rates) + " |")
    print("\nevents/s, best of 5 runs")


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [1_000, 10_000, 100_000])
