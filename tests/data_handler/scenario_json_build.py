"""Helpers shared by the scenario JSON tests: running a scenario and comparing exports."""

import json
from typing import Any

__all__ = ["without_oracle_action_ids"]


def without_oracle_action_ids(text: str) -> dict[str, Any]:
    """The export with the action ids of oracle events (and their runs) blanked.

    A scenario built in Python does not expose the action id its oracles will use, so its
    first export writes ARE's "" and the import derives one; everything else must match.
    """
    data: dict[str, Any] = json.loads(text)
    oracle_ids = {e["event_id"] for e in data["events"] if e["class_name"] == "OracleEvent"}
    for event in [*data["events"], *data["completed_events"]]:
        if event["event_id"] in oracle_ids and event["action"] is not None:
            event["action"]["action_id"] = ""
    return data
