"""Test support: the test data folder, and judge answers in the shape the rubric's output
model wants."""

import json
from collections.abc import Mapping
from pathlib import Path

DATA = Path(__file__).parents[1] / "data" / "evaluation"


def judge_answer(scores: Mapping[str, Mapping[str, int]]) -> str:
    """``{agent: {dimension: score}}`` as a judge's JSON answer, with a reason per score."""
    return json.dumps(
        {
            agent: {
                dimension: {"reasoning": f"{agent} on {dimension}", "score": score}
                for dimension, score in dimensions.items()
            }
            for agent, dimensions in scores.items()
        }
    )


def follow_ups(messages: list[dict[str, str]]) -> str:
    """The text the client added after the model's first answer (the repair message)."""
    return "\n".join(m["content"] for m in messages[2:] if m["role"] == "user")
