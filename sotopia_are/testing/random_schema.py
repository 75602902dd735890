"""`random_schema_rule`: a stand-in for a server that enforces the schema it is sent, and
nothing more.

A server that decodes under a JSON schema (llama.cpp, vLLM, OpenAI's strict mode)
promises only what the schema says, so every instance of the schema we send must be an
answer we accept. This rule answers a request with a random instance of its schema:
every required key and optional ones now and then, extra keys wherever
``additionalProperties`` allows them, any value of an enum (or the ``const``), any
number of array items (repeats included), any integer in range (now and then written as
a whole float such as ``7.0``, which JSON Schema counts as the same integer), and text
built from pieces that break naive code: empty and white-space-only strings, line
breaks of every kind, lines that read like a turn header or another participant's
action, quotes, brackets, non-ASCII (as long as ``minLength``/``maxLength`` allow). The
draws depend only on the rule's seed and the request, so a replayed run gets the same
answers.

Only the schema keywords our output types use are understood; any other is a
``ValueError`` rather than an instance that silently breaks a keyword it ignored.
"""

from __future__ import annotations

import hashlib
import json
import random
import string
from collections.abc import Mapping
from typing import Any

from .replies import ReplyLike, Rule, echo_rule

__all__ = ["random_instance", "random_schema_rule"]

# Keywords that say nothing about which values are valid.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$defs", "definitions"})
_UNDERSTOOD = _ANNOTATIONS | {
    "$ref",
    "anyOf",
    "const",
    "enum",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
}

# Text that has broken parsers, transcripts and prompts before, or could.
_PIECES = (
    "",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\n\n",
    "\u2028",
    "\x0b",
    "\x00",
    '"',
    "'",
    '",',
    "Turn #2",
    "Turn #13:",
    "\nTurn #3\n",
    'Bob said: "',
    'Ann said: "No."',
    "Ann [action] sits down",
    "Bob [non-verbal communication] nods",
    "did nothing",
    "left the conversation",
    "[private to ['Bob']]",
    "{",
    "}",
    "```json",
    "null",
    "Müller-Roth",
    "é",
    "🙂",
    "\u200b",
    "Fine.",
    "I would like the sunny half.",
)
_EXTRA_KEYS = ("type", "recipients", "action", "note", "score", "reasoning", "")
_SCALARS: tuple[Any, ...] = (None, True, False, 0, -1, 2.5, "", "x", [], {})


def random_schema_rule(seed: int = 0) -> Rule:
    """A rule answering a request that carries a JSON schema (``response_format``) with a
    random instance of it (see the module); other requests are echoed."""

    def rule(request: Mapping[str, Any]) -> ReplyLike:
        response_format = request.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("schema")
        if not isinstance(schema, dict):
            return echo_rule(request)
        digest = hashlib.sha256(
            json.dumps([request.get("messages"), schema], sort_keys=True).encode()
        ).hexdigest()
        return json.dumps(random_instance(schema, random.Random(f"{seed}:{digest}")))

    return rule


def random_instance(schema: Mapping[str, Any], rng: random.Random) -> Any:
    """A random instance of ``schema`` drawn with ``rng``; ``$ref`` points into the
    schema's own ``$defs``. ValueError for a keyword this generator does not understand."""
    return _Draw(schema.get("$defs", {}), rng).value(schema)


class _Draw:
    def __init__(self, definitions: Mapping[str, Any], rng: random.Random) -> None:
        self.definitions = definitions
        self.rng = rng

    def value(self, schema: Mapping[str, Any]) -> Any:
        unknown = sorted(set(schema) - _UNDERSTOOD)
        if unknown:
            raise ValueError(f"random_instance does not understand the keywords {unknown}")
        if "$ref" in schema:
            return self.value(self.definitions[str(schema["$ref"]).rsplit("/", 1)[-1]])
        if "anyOf" in schema:
            return self.value(self.rng.choice(schema["anyOf"]))
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(list(schema["enum"]))
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = self.rng.choice(kind)
        match kind:
            case "object":
                return self.object(schema)
            case "array":
                return self.array(schema)
            case "string":
                return self.text(int(schema.get("minLength", 0)), schema.get("maxLength"))
            case "integer":
                return self.integer(schema)
            case "number":
                return self.rng.uniform(schema.get("minimum", -100), schema.get("maximum", 100))
            case "boolean":
                return self.rng.random() < 0.5
            case "null":
                return None
        raise ValueError(f"random_instance needs a type or an enum: {dict(schema)}")

    def object(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        properties: Mapping[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ()))
        result = {
            name: self.value(sub)
            for name, sub in properties.items()
            if name in required or self.rng.random() < 0.5
        }
        extra = schema.get("additionalProperties", True)
        if extra is not False:
            for _ in range(self.rng.randint(0, 2)):
                key = self.extra_key(properties)
                if key not in properties:
                    result[key] = self.value(extra) if isinstance(extra, dict) else self.scalar()
        return result

    def extra_key(self, properties: Mapping[str, Any]) -> str:
        # Another spelling of a real key is the extra key most likely to confuse a reader.
        names = [*properties, *_EXTRA_KEYS]
        name = self.rng.choice(names)
        return self.rng.choice([name, name.upper(), name.title(), f"{name}_", self.word()])

    def scalar(self) -> Any:
        return self.rng.choice(_SCALARS)

    def array(self, schema: Mapping[str, Any]) -> list[Any]:
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", low + 3))
        size = self.rng.randint(low, high)
        items: Mapping[str, Any] = schema.get("items", {"type": "string"})
        return [self.value(items) for _ in range(size)]

    def text(self, shortest: int = 0, longest: int | None = None) -> str:
        drawn = "".join(
            self.rng.choice(_PIECES) if self.rng.random() < 0.6 else self.word()
            for _ in range(self.rng.randint(0, 6))
        )
        # Grown with the same pieces (white space among them: a minLength allows it).
        while len(drawn) < shortest:
            drawn += self.rng.choice(_PIECES) or self.word()
        return drawn if longest is None else drawn[: int(longest)]

    def word(self) -> str:
        alphabet = string.ascii_letters + string.digits + " .,!?-ßøλ"
        return "".join(self.rng.choice(alphabet) for _ in range(self.rng.randint(1, 12)))

    def integer(self, schema: Mapping[str, Any]) -> int | float:
        value = self.rng.randint(
            int(schema.get("minimum", -1000)), int(schema.get("maximum", 1000))
        )
        # JSON Schema counts 7.0 as the integer 7; a server may write it so.
        return float(value) if self.rng.random() < 0.2 else value
