"""Reading a reply over the HTTP transport: its body, bounded, and the chat completion in it.

A body read through aiohttp (the pool's sessions leave it compressed) is inflated a
bounded step at a time, as the lean client's are, so a reply, compressed or not, is cut
off at the endpoint's ``max_reply_bytes``; a 200's body becomes an
:class:`~sotopia_are.llm.request.LLMResponse` with its usage, cost and the server's own
time, or a
:class:`~sotopia_are.llm.errors.MalformedReplyError` saying what it is instead.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pydantic_core
from pydantic_core import SchemaValidator, core_schema

from sotopia_are.llm.http_errors import json_problem, malformed
from sotopia_are.llm.http_wire import inflate_capped
from sotopia_are.llm.price_table import cost
from sotopia_are.llm.request import LLMResponse
from sotopia_are.llm.valid_parts import of_valid_fields

if TYPE_CHECKING:
    import aiohttp

    from sotopia_are.llm.config import Endpoint

__all__ = ["completion", "read_capped", "unencodable"]


async def read_capped(response: aiohttp.ClientResponse, cap: int) -> bytes | None:
    """The decompressed body of ``response``, or None once it grows past ``cap`` bytes.

    The session leaves bodies compressed (``auto_decompress=False``): the body is read as
    sent, up to ``cap`` bytes, and inflated by :func:`~sotopia_are.llm.http_wire.inflate_capped`
    a bounded step at a time (aiohttp would inflate each network chunk whole, and 64 KB of
    a gzip bomb is 64 MB of text)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_READ_CHUNK):
        size += len(chunk)
        if size > cap:
            return None
        parts.append(chunk)
    return inflate_capped(b"".join(parts), response.headers.get("Content-Encoding", ""), cap)


_READ_CHUNK = 1 << 16


def completion(endpoint: Endpoint, model: str, raw: bytes) -> LLMResponse:
    """The answer in a 200's body ``raw``, or :class:`MalformedReplyError`."""
    try:
        # The common reply in one pass of pydantic-core: only the fields read here are
        # made into Python objects, each already of the type read below. Anything else
        # (another shape, a lone surrogate, a count that is no int...) is read the
        # general way, which says what is wrong or reads it the same.
        common = _COMMON_REPLY.validate_json(raw)
    except ValueError:
        return _completion(endpoint, model, raw)
    text = common["choices"][0]["message"]["content"]
    usage = common.get("usage")
    prompt_tokens = completion_tokens = None
    if usage is not None:
        prompt_tokens = usage.get("prompt_tokens")
        completion_tokens = usage.get("completion_tokens")
    timings = common.get("timings")
    return _response(endpoint, model, text, prompt_tokens, completion_tokens, timings)


def _completion(endpoint: Endpoint, model: str, raw: bytes) -> LLMResponse:
    """:func:`completion` of any body: the answer, or what is wrong with the body."""
    try:
        # pydantic-core's parser reads JSON as json.loads does (the same values) in a
        # third of its time; what it refuses, json.loads reads or says what is wrong with.
        reply = pydantic_core.from_json(raw)
    except ValueError:
        reply = _loads(endpoint, raw)
    if not isinstance(reply, dict):
        raise malformed(endpoint, "a JSON body of another shape")
    choices = reply.get("choices")
    if not choices or not isinstance(choices, list):
        raise malformed(endpoint, "a reply with no choices")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise malformed(endpoint, "a reply whose first choice has no message")
    content = message.get("content")
    usage = reply.get("usage")
    prompt_tokens = completion_tokens = None
    if isinstance(usage, dict):
        prompt_tokens = _count(usage.get("prompt_tokens"))
        completion_tokens = _count(usage.get("completion_tokens"))
    text = content if isinstance(content, str) else "" if content is None else str(content)
    return _response(endpoint, model, text, prompt_tokens, completion_tokens, reply.get("timings"))


def _response(
    endpoint: Endpoint,
    model: str,
    text: str,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    timings: Any,
) -> LLMResponse:
    """The :class:`LLMResponse` of a reply's fields, read; :class:`MalformedReplyError`
    for text that is not valid Unicode."""
    if not text.isascii():  # ASCII encodes as it is: the common case, without a copy
        problem = unencodable(text)
        if problem is not None:
            raise malformed(endpoint, problem)
    # Each field is of its type already (read and checked here): not validated again.
    return of_valid_fields(
        LLMResponse,
        {
            "text": text,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "cost_usd": cost(model, prompt_tokens, completion_tokens),
            "service_s": None if timings is None else _service_seconds(timings),
        },
    )


def _common_reply() -> SchemaValidator:
    """What :func:`completion` reads of a common reply: a first choice's message with its
    text (a string), and, if given, the usage's counts (ints, not bools) and the timings
    (any JSON), other fields and choices ignored. Strict, so that each value is one
    :func:`_completion` would take as it is."""
    fields, dict_of = core_schema.typed_dict_field, core_schema.typed_dict_schema
    count = fields(core_schema.int_schema(strict=True), required=False)
    message = dict_of({"content": fields(core_schema.str_schema(strict=True))})
    first = dict_of({"message": fields(message)})
    usage = dict_of({"prompt_tokens": count, "completion_tokens": count})
    return SchemaValidator(
        dict_of(
            {
                "choices": fields(
                    core_schema.tuple_schema(
                        [first, core_schema.any_schema()], variadic_item_index=1, min_length=1
                    )
                ),
                "usage": fields(usage, required=False),
                "timings": fields(core_schema.any_schema(), required=False),
            }
        )
    )


_COMMON_REPLY = _common_reply()


def unencodable(text: str) -> str | None:
    """What is wrong with a reply's ``text`` that cannot be encoded as UTF-8 (a lone
    surrogate, which a JSON body may carry as a ``\\ud800`` escape), else None. Such text
    would fail the episode later, when its record is written; as a malformed reply it is
    asked for again (on either transport)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = f"\\u{ord(text[error.start]):04x}"
        return (
            f"a reply whose text is not valid Unicode (a lone surrogate {code} at character "
            f"{error.start})"
        )
    return None


def _loads(endpoint: Endpoint, raw: bytes) -> Any:
    """``json.loads`` of ``raw``, or :class:`MalformedReplyError` saying why not."""
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise malformed(endpoint, "a body that is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise malformed(endpoint, json_problem(error)) from None
    except RecursionError:
        raise malformed(endpoint, "a JSON body nested too deep to read") from None


def _service_seconds(timings: Any) -> float | None:
    """The seconds the server spent on the answer, from llama.cpp's ``timings`` (prompt
    processing plus generation); None when the reply has none."""
    if not isinstance(timings, dict):
        return None
    total = 0.0
    for part in ("prompt_ms", "predicted_ms"):
        ms = timings.get(part)
        if not isinstance(ms, int | float) or isinstance(ms, bool):
            return None
        total += ms
    return total / 1000.0 if total > 0 else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
