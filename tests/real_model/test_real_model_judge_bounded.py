"""A real small judge's answer under the bounded schema, recorded once, read offline.

``tests/data/real_model/judge_bounded_qwen05.json`` holds one SOTOPIA-Eval request the
judge sent to Qwen2.5-Coder-0.5B (llama.cpp, one slot of 4,096 tokens) and its answer.
Before the reasonings were bounded in the schema, half of this model's judgements ran to
``max_tokens`` with their JSON unclosed; under ``maxLength`` llama.cpp ends each reasoning
at the bound, and the answer closes well within its budget. Record again (a served model,
``sotopia-are batch`` with ``serve.py --log-requests``) after changing the judge's schema:
the first test then says the recording is stale.
"""

import json
from pathlib import Path
from typing import Any

import jsonschema

from sotopia_are.evaluation import REASONING_MAX_CHARS, Rubric
from sotopia_are.llm.structured import parse_reply, response_format_for

RECORDING = Path(__file__).parents[1] / "data" / "real_model" / "judge_bounded_qwen05.json"


def recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECORDING.read_text("utf-8"))
    return data


def test_the_recorded_request_is_the_schema_the_judge_sends_now() -> None:
    data = recorded()
    output_type = Rubric.load(data["rubric"]).output_model(data["agent_names"])
    sent = response_format_for("json_schema", output_type)
    assert data["request"]["response_format"] == sent, f"{RECORDING.name} is stale: record it again"


def test_the_server_ended_every_reasoning_at_the_bound_and_closed_the_json() -> None:
    data = recorded()
    schema = data["request"]["response_format"]["json_schema"]["schema"]
    answer = json.loads(data["content"])
    jsonschema.validate(answer, schema)
    reasonings = [rating["reasoning"] for ratings in answer.values() for rating in ratings.values()]
    assert len(reasonings) == 2 * 7
    assert max(len(text) for text in reasonings) == REASONING_MAX_CHARS
    assert data["finish_reason"] == "stop"
    assert data["usage"]["completion_tokens"] < data["request"]["max_tokens"]


def test_the_recorded_answer_is_accepted_as_written() -> None:
    data = recorded()
    output_type = Rubric.load(data["rubric"]).output_model(data["agent_names"])
    parsed = parse_reply(data["content"], output_type)
    assert parsed.normalizations == ()
