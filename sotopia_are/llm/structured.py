"""Structured output: how the schema is requested, and how a reply becomes a model.

Parsing is lenient in form and strict in content. Presentation is tolerated (```json
fences, prose before or after the JSON), and an output type may define one normalisation
step for the form its JSON takes (see :class:`NormalizesReplies`), but a reply that does
not then validate against the pydantic model is an :class:`OutputValidationError`, never
a default value.

The contract of an output type with the schema it sends (:func:`response_format_for`,
:func:`schema_text`): every instance of that schema is accepted by :func:`parse_reply`.
A server decoding under the schema promises nothing more, so a constraint the type
cares about is stated in the schema, or its normalisation step makes an instance that
breaks it valid (and notes how) — see ``docs/structured-output.md``.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

import pydantic_core
from pydantic import BaseModel, ValidationError

from sotopia_are import SotopiaAreError
from sotopia_are.llm._litellm import load_litellm
from sotopia_are.llm.valid_parts import of_valid_dataclass

__all__ = [
    "CHARS_PER_TOKEN",
    "FORM_TOKENS",
    "OUTPUT_MODES",
    "NormalizesReplies",
    "OutputMode",
    "OutputModeMemory",
    "OutputValidationError",
    "ParsedReply",
    "extract_json",
    "parse_output",
    "parse_reply",
    "rejects_response_format",
    "resolve_output_mode",
    "response_format_for",
    "response_format_within",
    "schema_text",
    "text_max_chars",
    "weaker_output_mode",
]

M = TypeVar("M", bound=BaseModel)

OutputMode = Literal["auto", "json_schema", "json_object", "prompt"]
"""How structured output is requested.

``json_schema`` sends the schema as ``response_format`` (the provider enforces it);
``json_object`` asks for JSON mode and puts the schema in the prompt; ``prompt`` only puts
the schema in the prompt; ``auto`` picks ``json_schema`` for a model behind an
OpenAI-compatible base URL (vLLM, SGLang, llama.cpp and Ollama enforce it while decoding)
or one litellm says supports it, else ``prompt``. When a server rejects the
``response_format`` that ``auto`` chose, the call falls back to the next weaker mode
(``json_schema`` → ``json_object`` → ``prompt``), and :class:`OutputModeMemory` keeps
that answer for the endpoint.
"""

CHARS_PER_TOKEN = 3
"""The characters a token of a model's text is taken to hold when a free text's
``maxLength`` in a schema is chosen to fit a token budget (:func:`text_max_chars`).

English prose runs to 3-4 characters a token with current models' tokenizers; the low
end keeps an answer of texts at their ``maxLength`` within its budget."""


FORM_TOKENS = "answer_form_tokens"
"""The class attribute (an int) in which an output type whose texts are bounded for a
token budget says how many tokens its answer takes beside those texts (keys, numbers,
white space): what :func:`response_format_within` leaves aside when it cuts the bounds."""


def text_max_chars(tokens: int) -> int:
    """The ``maxLength`` of a free text that must fit in ``tokens`` tokens of an answer.

    Output types state it in the JSON schema only (``json_schema_extra``), never as a
    validation rule: a server that decodes under the schema (llama.cpp, vLLM) then ends
    the text in time to close the JSON within ``max_tokens``, and a longer text from a
    server that does not enforce it is still accepted.
    """
    return tokens * CHARS_PER_TOKEN


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class OutputValidationError(SotopiaAreError, ValueError):
    """A reply is not JSON, or its JSON does not validate; the message says why."""


@runtime_checkable
class NormalizesReplies(Protocol):
    """An output type that puts a reply's JSON into canonical form before validation.

    ``normalize_reply(data)`` returns the data to validate and one note per change (what
    was written and what it became). It may only change form (spelling, case, ``null``
    for an empty text, a wrapper object, a value the output type ignores); what a reply
    means stays for validation to accept or refuse. After it, every instance of the
    type's JSON schema validates.
    """

    @classmethod
    def normalize_reply(cls, data: Any) -> tuple[Any, list[str]]: ...


@dataclass(frozen=True)
class ParsedReply(Generic[M]):
    """A validated reply: the ``value`` and the ``normalizations`` made to its JSON first."""

    value: M
    normalizations: tuple[str, ...] = ()


_WEAKER: dict[OutputMode, OutputMode] = {"json_schema": "json_object", "json_object": "prompt"}


def weaker_output_mode(mode: OutputMode) -> OutputMode | None:
    """The mode ``auto`` falls back to after ``mode`` (None after ``prompt``)."""
    return _WEAKER.get(mode)


class OutputModeMemory:
    """The output mode each endpoint accepted after rejecting a stronger one.

    Process-wide by design (like the concurrency registry): a server that refused
    ``json_schema`` once refuses it for every episode, so no later call should pay for
    asking again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._modes: dict[str, OutputMode] = {}

    def get(self, endpoint: str) -> OutputMode | None:
        """The mode learned for ``endpoint`` (``model@api_base``), if any."""
        # Asked for every structured call; a lookup in a dict that only weaken() writes
        # (under the lock) needs none.
        return self._modes.get(endpoint)

    def weaken(self, endpoint: str, rejected: OutputMode) -> OutputMode | None:
        """Remember that ``endpoint`` rejected ``rejected``; the mode to use instead
        (None: there is no weaker one)."""
        weaker = weaker_output_mode(rejected)
        if weaker is not None:
            with self._lock:
                self._modes[endpoint] = weaker
        return weaker


OUTPUT_MODES = OutputModeMemory()
"""The memory every :class:`~sotopia_are.llm.session.LLMSession` uses by default."""


def resolve_output_mode(
    mode: OutputMode,
    model: str,
    api_base: str | None = None,
    *,
    endpoint: str | None = None,
    memory: OutputModeMemory = OUTPUT_MODES,
) -> OutputMode:
    """Turn ``auto`` into a concrete mode for ``model`` (at ``api_base``); other modes are
    returned as is. What ``memory`` learned for ``endpoint`` wins over the first guess."""
    if mode != "auto":
        return mode
    learned = memory.get(endpoint) if endpoint is not None else None
    if learned is not None:
        return learned
    if api_base is not None:
        return "json_schema"
    return "json_schema" if _supports_response_schema(model) else "prompt"


# What servers say when they do not take a response_format (llama.cpp, vLLM, SGLang,
# LM Studio and hosted APIs word it differently; each names one of these).
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema", "grammar", "guided")


def rejects_response_format(message: str) -> bool:
    """Whether a server's error ``message`` for a request is about its ``response_format``."""
    lowered = message.lower()
    return any(word in lowered for word in _FORMAT_WORDS)


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
    copy their parameters on validation, so no transport can; call records share it)."""
    return output_type.model_json_schema()


@functools.lru_cache(maxsize=512)
def schema_text(output_type: type[BaseModel]) -> str:
    """The JSON schema of ``output_type`` as indented text, for prompts."""
    return json.dumps(_json_schema(output_type), indent=2)


@functools.lru_cache(maxsize=512)
def response_format_for(mode: OutputMode, output_type: type[BaseModel]) -> dict[str, Any] | None:
    """The ``response_format`` request parameter for a concrete ``mode`` (None: send none):
    the same object for every request of ``output_type`` (the HTTP transport keeps its JSON
    by it), shared by the requests and records of its calls: never change it."""
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


@functools.lru_cache(maxsize=512)
def response_format_within(
    mode: OutputMode, output_type: type[BaseModel], max_tokens: int, budget: int
) -> dict[str, Any] | None:
    """:func:`response_format_for`'s, for a request sending ``max_tokens`` below the
    ``budget`` its output type's texts were bounded for (``maxLength``, see
    :func:`text_max_chars`): a user's smaller ``max_tokens``. Every ``maxLength`` of the
    schema is cut, all in one proportion, so that an answer decoded under it still closes
    its JSON in time (one cut short is no answer at all): the texts share what is left of
    ``max_tokens`` beside the rest of the answer, its :data:`FORM_TOKENS` attribute
    (taken as 0 when the type has none). The same object for every such request; never
    change it."""
    whole = response_format_for(mode, output_type)
    if whole is None or mode != "json_schema" or max_tokens >= budget:
        return whole
    form = getattr(output_type, FORM_TOKENS, 0)
    share = max(0, max_tokens - form) / (budget - form) if budget > form else 0.0
    named = whole["json_schema"]
    schema = _lengths_cut(named["schema"], share)
    return {**whole, "json_schema": {**named, "schema": schema}}


def _lengths_cut(schema: Any, share: float) -> Any:
    """``schema`` copied with every ``maxLength`` (an integer) cut to ``share`` of itself,
    at least 1."""
    if isinstance(schema, dict):
        return {
            key: max(1, int(value * share))
            if key == "maxLength" and type(value) is int
            else _lengths_cut(value, share)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_lengths_cut(value, share) for value in schema]
    return schema


def extract_json(text: str) -> Any:
    """The JSON value in ``text``: the whole text, a fenced block, or the first JSON
    object or array embedded in prose."""
    # The whole text first (most replies); the fences are looked for only when it is not
    # JSON. pydantic-core's parser reads JSON as json.loads does (the same values) in a
    # third of its time; what it refuses (a lone surrogate, deep nesting, text that is
    # not all JSON), json.loads reads or refuses.
    try:
        return pydantic_core.from_json(text)
    except (ValueError, TypeError):  # (TypeError: a str with a lone surrogate of its own)
        pass
    try:
        return json.loads(text.strip())
    except json.JSONDecodeError:
        pass
    except RecursionError:
        raise OutputValidationError("the reply's JSON is nested too deep to read") from None
    for fenced in _FENCE.finditer(text):
        try:
            return json.loads(fenced.group(1).strip())
        except json.JSONDecodeError:
            continue
        except RecursionError:
            raise OutputValidationError("the reply's JSON is nested too deep to read") from None
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[{\[]", text):
        try:
            value, _end = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        except RecursionError:
            raise OutputValidationError("the reply's JSON is nested too deep to read") from None
        return value
    raise OutputValidationError("the reply contains no JSON object")


def parse_output(text: str, output_type: type[M]) -> M:
    """Parse and validate ``text`` as ``output_type`` (see :func:`parse_reply`)."""
    return parse_reply(text, output_type).value


def parse_reply(text: str, output_type: type[M]) -> ParsedReply[M]:
    """Parse ``text``, normalise its JSON if ``output_type`` says how
    (:class:`NormalizesReplies`), and validate it as ``output_type``."""
    data = extract_json(text)
    # JSON text yields a surrogate only from the \u escape of one (\ud800 to \udfff, so
    # "\ud" or "\uD") or one written as it is (so not ASCII); other escapes (a model's
    # "\u2026") need no walk of the value, and substring tests cost far less than a
    # pattern's scan of a judge's long reply.
    if "\\ud" in text or "\\uD" in text or (not text.isascii() and _SURROGATE.search(text)):
        unencodable = _lone_surrogate(data, "(root)")
        if unencodable is not None:
            raise OutputValidationError(unencodable)
    notes: list[str] = []
    if _normalizes(output_type):
        data, notes = output_type.normalize_reply(data)  # type: ignore[attr-defined]
    try:
        value = output_type.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_problem(error) for error in exc.errors())
        raise OutputValidationError(
            f"the JSON does not match {output_type.__name__}: {problems}"
        ) from exc
    # Every structured call ends here: made as ParsedReply(value, tuple(notes)) would be.
    return of_valid_dataclass(ParsedReply, {"value": value, "normalizations": tuple(notes)})


_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(value: Any, where: str) -> str | None:
    """What is wrong when a string in the JSON ``value`` holds a lone surrogate (a
    ``\\ud800`` escape with no partner: ``json.loads`` joins real pairs), else None. Such
    text cannot be encoded as UTF-8, so no record holding it could be stored."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is None:
            return None
        code = f"\\u{ord(found.group()):04x}"
        return f"{where}: the text holds a lone surrogate ({code}), which is not valid Unicode"
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _lone_surrogate(key, where) or _lone_surrogate(
                item, key if where == "(root)" else f"{where}.{key}"
            )
            if problem is not None:
                return problem
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problem = _lone_surrogate(item, str(index) if where == "(root)" else f"{where}.{index}")
            if problem is not None:
                return problem
    return None


@functools.lru_cache(maxsize=512)
def _normalizes(output_type: type[BaseModel]) -> bool:
    """Whether ``output_type`` is :class:`NormalizesReplies` (asked once per type: a
    runtime protocol check costs more than the rest of parsing a short reply)."""
    return isinstance(output_type, NormalizesReplies)


def _problem(error: Any) -> str:
    """``where: what (got value)``: the repair prompt quotes what was wrong, exactly."""
    where = ".".join(str(part) for part in error["loc"]) or "(root)"
    value = error.get("input")
    # A whole object or list is the model's own answer; quoting it again adds nothing.
    got = "" if isinstance(value, dict | list) else f" (got {json.dumps(value, default=str)})"
    return f"{where}: {error['msg']}{got}"
