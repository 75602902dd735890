"""Helpers of the CLI tests: the command runner, and local-server replies for agents and
the judge."""

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from click.testing import Result
from typer.testing import CliRunner

from sotopia_are.cli import app
from sotopia_are.evaluation import SOTOPIA_EVAL, Rubric
from sotopia_are.testing import Rule

EXAMPLES = Path(__file__).parents[2] / "examples"
SCENARIOS = EXAMPLES / "scenarios"
SCRIPTS = EXAMPLES / "scripts"
MODEL = "openai/test-model"
BAKERY = ["Mara Quinn", "Teo Alvarez"]


def invoke(*args: str | Path, env: Mapping[str, str] | None = None) -> Result:
    """Run ``sotopia-are ARGS`` in-process, with no stdin."""
    return CliRunner().invoke(app, [str(a) for a in args], env=dict(env or {}), input="")


def judge_reply(names: Sequence[str], rubric: Rubric = SOTOPIA_EVAL) -> str:
    """A valid judge answer: the middle of each dimension's range for every agent."""
    return json.dumps(
        {
            name: {
                d.name: {"reasoning": f"{name} on {d.name}", "score": (d.low + d.high) // 2}
                for d in rubric.dimensions
            }
            for name in names
        }
    )


def conversation_rule(names: Sequence[str], rubric: Rubric = SOTOPIA_EVAL) -> Rule:
    """Agents always speak; the judge (its system prompt) gets a valid rating."""

    def answer(body: Mapping[str, Any]) -> str:
        if "impartial expert judge" in body["messages"][0]["content"]:
            return judge_reply(names, rubric)
        return json.dumps({"action_type": "speak", "argument": "Let us meet halfway."})

    return answer
