"""The test server's random-instance mode: what a server enforcing our schemas may answer.

Its instances must be instances (checked by an independent validator, ``jsonschema``),
must reach the odd corners the schema allows (else the acceptance tests built on it
prove little), and must be the same for the same request.
"""

import json
import random
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.agents import action_output_type
from sotopia_are.evaluation import SOTOPIA_EVAL
from sotopia_are.llm import LLMSession
from sotopia_are.llm.structured import response_format_for
from sotopia_are.testing import LocalLLMServer, Rule, random_instance, random_schema_rule

NAMES = ("Ines Okafor", "Benedikt Müller-Roth", "Jo Ng")
ALL = ("none", "speak", "non-verbal communication", "action", "leave")
SCHEMAS = [
    response_format_for("json_schema", output_type)["json_schema"]["schema"]  # type: ignore[index]
    for output_type in (
        action_output_type(NAMES[0], NAMES, ALL),
        action_output_type(NAMES[1], NAMES, ("none", "speak")),
        action_output_type(NAMES[2], NAMES[2:], ("speak", "leave")),
        SOTOPIA_EVAL.output_model(list(NAMES)),
    )
]


@given(st.sampled_from(SCHEMAS), st.integers(min_value=0, max_value=2**64))
def test_every_draw_is_an_instance_of_the_schema(schema: dict[str, Any], seed: int) -> None:
    instance = random_instance(schema, random.Random(seed))
    jsonschema.Draft202012Validator(schema).validate(instance)


def test_the_draws_reach_what_the_schema_allows_and_naive_code_refuses() -> None:
    agent, judge = SCHEMAS[0], SCHEMAS[3]
    actions = [random_instance(agent, random.Random(seed)) for seed in range(300)]
    scores = [
        rating["score"]
        for seed in range(30)
        for ratings in random_instance(judge, random.Random(seed)).values()
        for rating in ratings.values()
    ]
    assert any(a["action_type"] == "leave" and a["argument"].strip() for a in actions)
    assert any(a["action_type"] == "speak" and "\n" in a["argument"] for a in actions)
    assert any(len(set(a.get("to") or [])) < len(a.get("to") or []) for a in actions)
    assert any(isinstance(score, float) for score in scores)
    assert any(isinstance(score, int) for score in scores)


def test_a_keyword_it_does_not_understand_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"does not understand the keywords \['pattern'\]"):
        random_instance({"type": "string", "pattern": "^a+$"}, random.Random(0))


def chat(rule: Rule, schema: dict[str, Any] | None, text: str = "hello") -> str:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": text}]}
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
    reply = rule(body)
    assert isinstance(reply, str)
    return reply


def test_the_rule_answers_the_same_request_alike_and_echoes_one_without_a_schema() -> None:
    rule, other = random_schema_rule(seed=1), random_schema_rule(seed=2)
    schema = SCHEMAS[0]
    answers = {chat(rule, schema, f"turn {n}") for n in range(20)}
    assert len(answers) > 10  # different prompts, different draws
    assert chat(rule, schema) == chat(random_schema_rule(seed=1), schema)
    assert {chat(other, schema, f"turn {n}") for n in range(20)} != answers
    jsonschema.validate(json.loads(chat(rule, schema)), schema)
    assert chat(rule, None, "no schema") == "no schema"


async def test_through_http_the_answer_is_an_instance_of_the_schema_sent(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = random_schema_rule()
    session = make_session()
    output_type = action_output_type(NAMES[0], NAMES, ALL)
    for turn in range(10):
        await session.generate("openai/test-model", "test/plain.j2", {"word": turn}, output_type)
    for request in llm_server.chat_requests:
        schema = request.body["response_format"]["json_schema"]["schema"]
        assert schema == SCHEMAS[0]
        jsonschema.validate(json.loads(llm_server.rule(request.body)), schema)  # type: ignore[arg-type]
    # Each answer was accepted as it came: no request was asked again.
    assert len(llm_server.chat_requests) == 10 and all(len(c.attempts) == 1 for c in session.calls)
