"""Oracle mode: running the expected agent actions (:class:`OracleEvent`) and dumping the
environment's final state, so a scenario's intended run can be replayed and inspected.

:func:`~sotopia_are.simulation.environment.run_in_oracle_mode` runs a whole scenario so.
"""

from __future__ import annotations

import json
import os
from typing import Any

from sotopia_are.simulation.actions import AbstractEnvironment
from sotopia_are.simulation.events import CompletedOracleEvent, Event, OracleEvent
from sotopia_are.simulation.files import write_text_atomically
from sotopia_are.simulation.placeholders import resolve_arg_placeholders

__all__ = ["dump_state", "run_oracle"]


def run_oracle(oracle: OracleEvent, env: AbstractEnvironment, now: float) -> CompletedOracleEvent:
    """Make ``oracle``'s event for ``env``, resolve its placeholders against ``env``'s log
    and run it at ``now``; the record carries the oracle's id, dependencies and timing.
    ValueError without ``make_event``; TypeError if it makes something not an Event."""
    if oracle.make_event is None:
        raise ValueError(f"oracle event {oracle.event_id} has no make_event")
    made = oracle.make_event(env)
    if not isinstance(made, Event):
        raise TypeError(f"oracle event {oracle.event_id} made a {type(made).__name__}")
    completed = resolve_arg_placeholders(made, env.event_log).execute(event_time=now)
    return CompletedOracleEvent.from_completed_event_and_oracle_event(completed, oracle)


def dump_state(state: dict[str, Any], dump_dir: str) -> None:
    """Write ``state`` as JSON to ``dump_dir``/environment_state.json (values that are not
    JSON become their repr)."""
    # Serialised first and renamed into place: a failure or crash while dumping leaves any
    # earlier dump whole rather than a half-written file.
    write_text_atomically(
        os.path.join(dump_dir, "environment_state.json"), json.dumps(state, indent=2, default=repr)
    )
