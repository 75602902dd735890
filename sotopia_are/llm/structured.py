"""Structured output: how the schema is requested, and how a reply becomes a model.

Parsing is tolerant of presentation (```json fences, prose before or after the JSON) but
never of content: a reply that does not validate against the pydantic model is an
:class:`OutputValidationError`, never a default value.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from sotopia_are.llm._litellm import load_litellm

__all__ = [
    "OutputMode",
    "OutputValidationError",
    "extract_json",
    "parse_output",
    "resolve_output_mode",
    "response_format_for",
    "schema_text",
]

M = TypeVar("M", bound=BaseModel)

OutputMode = Literal["auto", "json_schema", "json_object", "prompt"]
"""How structured output is requested.

``json_schema`` sends the schema as ``response_format`` (the provider enforces it);
``json_object`` asks for JSON mode and puts the schema in the prompt; ``prompt`` only puts
the schema in the prompt; ``auto`` picks ``json_schema`` when litellm says the model
supports it, else ``prompt``.
"""

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class OutputValidationError(ValueError):
    """A reply is not JSON, or its JSON does not validate; the message says why."""


def resolve_output_mode(mode: OutputMode, model: str) -> OutputMode:
    """Turn ``auto`` into a concrete mode for ``model``; other modes are returned as is."""
    if mode != "auto":
        return mode
    return "json_schema" if _supports_response_schema(model) else "prompt"


# The caches below sit on the path of every structured call: asking litellm costs ~0.1 ms
# and building a schema ~0.5 ms (several ms for a judge's rubric model), while a turn's
# whole framework budget is 1 ms. Models and output types are few and long-lived, so
# small bounded caches hold them all.
@functools.lru_cache(maxsize=256)
def _supports_response_schema(model: str) -> bool:
    return bool(load_litellm().supports_response_schema(model=model))


@functools.lru_cache(maxsize=512)
def _json_schema(output_type: type[BaseModel]) -> dict[str, Any]:
    """``output_type``'s JSON schema, shared between calls: never mutate it (requests
    copy their parameters on validation, so nothing downstream can)."""
    return output_type.model_json_schema()


@functools.lru_cache(maxsize=512)
def schema_text(output_type: type[BaseModel]) -> str:
    """The JSON schema of ``output_type`` as indented text, for prompts."""
    return json.dumps(_json_schema(output_type), indent=2)


def response_format_for(mode: OutputMode, output_type: type[BaseModel]) -> dict[str, Any] | None:
    """The ``response_format`` request parameter for a concrete ``mode`` (None: send none)."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {
                "name": output_type.__name__,
                "schema": _json_schema(output_type),
                # Strict mode would reject ordinary pydantic schemas (optional fields,
                # defaults); validation happens here anyway.
                "strict": False,
            },
        }
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def extract_json(text: str) -> Any:
    """The JSON value in ``text``: the whole text, a fenced block, or the first JSON
    object or array embedded in prose."""
    stripped = text.strip()
    candidates = [stripped, *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[{\[]", text):
        try:
            value, _end = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        return value
    raise OutputValidationError("the reply contains no JSON object")


def parse_output(text: str, output_type: type[M]) -> M:
    """Parse and validate ``text`` as ``output_type``."""
    data = extract_json(text)
    try:
        return output_type.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()
        )
        raise OutputValidationError(
            f"the JSON does not match {output_type.__name__}: {problems}"
        ) from exc
