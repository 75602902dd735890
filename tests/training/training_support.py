"""Specs and stand-in rules of the training tests."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator, Mapping
from typing import Any

from sotopia_are.social import EpisodeSpec
from sotopia_are.testing import ReplyLike, schema_rule
from sotopia_are.testing.replies import schema_instance

MODEL = "openai/test-model"
NAMES = ["Mara Quinn", "Teo Alvarez"]
LINES = ("Could we split the difference?", "I need the full price.", "Half, and I take all.")


def bakery(episode_id: str = "bakery", turns: int = 4, **changes: Any) -> EpisodeSpec:
    return EpisodeSpec(
        episode_id=episode_id,
        scenario="A bakery before closing.",
        agent_names=list(changes.pop("agent_names", NAMES)),
        agent_backgrounds=list(changes.pop("agent_backgrounds", ["the baker", "a café owner"])),
        agent_goals=list(changes.pop("agent_goals", ["sell the bread", "buy it cheap"])),
        max_turns=turns,
        **changes,
    )


class VariedRule:
    """Valid answers that differ from call to call: the n-th agent request says
    ``LINES[n % 3]``, the n-th judge request gives every dimension its n-th value."""

    def __init__(self) -> None:
        self._agent: Iterator[int] = itertools.count()
        self._judge: Iterator[int] = itertools.count()

    def __call__(self, request: Mapping[str, Any]) -> ReplyLike:
        schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema")
        if not isinstance(schema, dict):
            return schema_rule(request)
        if "action_type" in schema.get("properties", {}):
            line = LINES[next(self._agent) % len(LINES)]
            return json.dumps({"action_type": "speak", "argument": line})
        n = next(self._judge)
        definitions = copy.deepcopy(schema.get("$defs", {}))
        for definition in definitions.values():
            score = definition.get("properties", {}).get("score")
            if score and "minimum" in score:
                low, high = score["minimum"], score["maximum"]
                score["minimum"] = score["maximum"] = low + (3 * n) % (high - low + 1)
        return json.dumps(schema_instance({**schema, "$defs": definitions}, definitions))
