"""A real small judge asked for fewer tokens than its budget, recorded once, read offline.

``tests/data/real_model/judge_budget_qwen05.json`` (see the README beside it) holds two
answers of Qwen2.5-Coder-0.5B (llama.cpp) to a SOTOPIA-Eval request with ``max_tokens``
1,200 of the judge's 2,440: one under the schema as it was (each reasoning bounded to 360
characters, fitted to the whole budget), which ran to the 1,200 tokens and is no answer;
one under the schema cut to fit (``response_format_within``), which closed. Record again
(a served model, ``sotopia-are batch … --judge-sampling temperature=0,max_tokens=1200``)
after changing the judge's schema: the first test then says the recording is stale.
"""

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from sotopia_are.evaluation import LLMJudge, Rubric
from sotopia_are.llm import LLMSession
from sotopia_are.llm.structured import (
    OutputValidationError,
    parse_reply,
    response_format_for,
    response_format_within,
)

RECORDING = Path(__file__).parents[1] / "data" / "real_model" / "judge_budget_qwen05.json"


def recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECORDING.read_text("utf-8"))
    return data


def output_type(data: dict[str, Any]) -> type[Any]:
    return Rubric.load(data["rubric"]).output_model(data["agent_names"])


def budget(data: dict[str, Any]) -> int:
    judge = LLMJudge("openai/qwen05", Rubric.load(data["rubric"]), session=LLMSession())
    return judge.max_tokens(len(data["agent_names"]))


def test_the_recorded_requests_are_the_schemas_sent_before_and_now() -> None:
    data = recorded()
    asked = data["cut"]["request"]["max_tokens"]
    assert asked == data["whole"]["request"]["max_tokens"] < budget(data)
    now = response_format_within("json_schema", output_type(data), asked, budget(data))
    assert data["cut"]["request"]["response_format"] == now, f"{RECORDING.name} is stale"
    whole = response_format_for("json_schema", output_type(data))
    assert data["whole"]["request"]["response_format"] == whole, f"{RECORDING.name} is stale"


def test_under_the_whole_bounds_the_answer_ran_out_and_is_no_answer() -> None:
    whole = recorded()["whole"]
    assert whole["usage"]["completion_tokens"] == whole["request"]["max_tokens"]
    with pytest.raises(OutputValidationError):
        parse_reply(whole["content"], output_type(recorded()))


def test_under_the_cut_bounds_every_reasoning_ended_in_time_and_the_answer_closed() -> None:
    data = recorded()
    cut = data["cut"]
    schema = cut["request"]["response_format"]["json_schema"]["schema"]
    [bound] = {int(n) for n in re.findall(r'"maxLength": (\d+)', json.dumps(schema))}
    answer = json.loads(cut["content"])
    jsonschema.validate(answer, schema)
    reasonings = [rating["reasoning"] for ratings in answer.values() for rating in ratings.values()]
    assert len(reasonings) == 2 * 7
    assert max(len(text) for text in reasonings) <= bound < 360
    assert cut["usage"]["completion_tokens"] < cut["request"]["max_tokens"]
    parsed = parse_reply(cut["content"], output_type(data))
    assert parsed.normalizations == ()
