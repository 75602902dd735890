"""Scripted replies of the local OpenAI-compatible test server.

A :class:`Reply` says what the server answers to one request: a normal completion, an
HTTP error (429 with ``Retry-After``, 500, 401…), a raw malformed body (a gzip bomb
among them), a delay, or a hang.
A *rule* is any callable that maps the request's JSON body to a ``Reply`` (or to a plain
string, shorthand for a normal completion with that text).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = ["Reply", "ReplyLike", "Rule", "echo_rule", "schema_instance", "schema_rule"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    ``content`` is the assistant text of a 200 completion. ``status`` other than 200 sends an
    OpenAI-style error body with ``error_message``. ``body`` replaces the whole response body
    verbatim (for malformed JSON). ``delay`` waits that many seconds before answering;
    ``hang`` never answers (the client must time out). ``prompt_tokens`` and
    ``completion_tokens`` default to whitespace word counts of the prompt and the reply.
    """

    content: str = ""
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hang: bool = False
    body: bytes | None = None
    error_message: str = "scripted error"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @classmethod
    def text(cls, content: str, *, delay: float = 0.0) -> Reply:
        """A normal completion whose assistant message is ``content``."""
        return cls(content=content, delay=delay)

    @classmethod
    def rate_limited(cls, retry_after: float, *, header: str = "Retry-After") -> Reply:
        """A 429 asking the client to wait ``retry_after`` seconds (in ``header``)."""
        value = (
            str(int(retry_after * 1000))
            if header.lower() == "retry-after-ms"
            else f"{retry_after:g}"
        )
        return cls(status=429, headers={header: value}, error_message="rate limited (scripted)")

    @classmethod
    def server_error(cls, status: int = 500) -> Reply:
        """A 5xx error."""
        return cls(status=status, error_message="internal error (scripted)")

    @classmethod
    def error(cls, status: int, message: str) -> Reply:
        """Any HTTP error status with an OpenAI-style error body."""
        return cls(status=status, error_message=message)

    @classmethod
    def malformed(cls, body: bytes = b'{"choices": [ this is not json') -> Reply:
        """A 200 whose body is not valid JSON."""
        return cls(body=body)

    @classmethod
    def gzip_bomb(cls, inflated_bytes: int) -> Reply:
        """A 200 chat completion sent gzip-compressed whose body inflates to about
        ``inflated_bytes`` (its content is spaces): about a thousandth of that on the
        wire, so a client that inflates it unbounded holds all of it."""
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
        parts = [compressor.compress(b'{"choices": [{"index": 0, "message": {"content": "')]
        block = b" " * (1 << 20)
        for start in range(0, inflated_bytes, len(block)):
            parts.append(compressor.compress(block[: inflated_bytes - start]))
        parts.append(compressor.compress(b'"}}]}'))
        parts.append(compressor.flush())
        return cls(body=b"".join(parts), headers={"Content-Encoding": "gzip"})

    @classmethod
    def hanging(cls) -> Reply:
        """Accept the request and never answer."""
        return cls(hang=True)


ReplyLike: TypeAlias = Reply | str
Rule: TypeAlias = Callable[[Mapping[str, Any]], ReplyLike]


def echo_rule(request: Mapping[str, Any]) -> ReplyLike:
    """The default rule: answer with the content of the last message of the request."""
    messages = request.get("messages") or [{}]
    content = messages[-1].get("content", "")
    return content if isinstance(content, str) else str(content)


def schema_rule(request: Mapping[str, Any]) -> ReplyLike:
    """A stand-in that plays along: a request with a JSON schema (``response_format``) is
    answered with a valid instance of it, anything else by echoing the last message.

    The instance is the simplest that validates: every required key, the first allowed
    value of an enum (``"speak"`` when it is allowed, so agents talk), the middle of an
    integer range, ``"…"`` for text. Episodes and verdicts then run end to end offline,
    e.g. for a dry run of a study or the README's example; the conversation is not
    meant to make sense.
    """
    response_format = request.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if not isinstance(schema, dict):
        return echo_rule(request)
    return json.dumps(schema_instance(schema, schema.get("$defs", {})))


def schema_instance(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> Any:
    """The simplest valid instance of ``schema`` (see :func:`schema_rule`); a ``$ref``
    points into ``definitions``."""
    if "$ref" in schema:
        return schema_instance(definitions[str(schema["$ref"]).rsplit("/", 1)[-1]], definitions)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return schema_instance(schema[key][0], definitions)
    if "enum" in schema:
        options = list(schema["enum"])
        return "speak" if "speak" in options else options[0]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            name: schema_instance(properties[name], definitions)
            for name in schema.get("required", list(properties))
        }
    if kind == "array":
        return []
    if kind == "integer":
        low, high = schema.get("minimum", 0), schema.get("maximum", 10)
        return (low + high) // 2
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "…"
