"""`Sampling`: how a model samples its answers — temperature, top-p, answer length, seed.

Agents and the judge each take a :class:`Sampling`; what it sets is sent with every request
they make (:meth:`Sampling.params`), and each call's record keeps the parameters it sent
(``LLMCall.params``). A field left None is not sent, so the provider's default applies.
The judge's default is :data:`DEFAULT_JUDGE_SAMPLING` (temperature 0: a rating should not
depend on the draw); the agents' default is ``Sampling()`` (the provider's defaults).

On the command line and in environment variables a sampling is written
``temperature=0.7,top_p=0.9,seed=3,presence_penalty=0.1`` (:meth:`Sampling.parse`).
"""

from __future__ import annotations

import json
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

__all__ = [
    "AGENT_SAMPLING_ENV",
    "DEFAULT_JUDGE_SAMPLING",
    "JUDGE_SAMPLING_ENV",
    "RESERVED_PARAMS",
    "Sampling",
]

AGENT_SAMPLING_ENV = "SOTOPIA_ARE_SAMPLING"
"""The CLI's variable for the agents' sampling (written as :meth:`Sampling.parse` reads)."""
JUDGE_SAMPLING_ENV = "SOTOPIA_ARE_JUDGE_SAMPLING"
"""The CLI's variable for the judge's sampling (written as :meth:`Sampling.parse` reads)."""

RESERVED_PARAMS = frozenset(
    {"messages", "model", "response_format", "stream", "n", "api_base", "api_key", "timeout"}
)
"""Request parameters the LLM layer sets itself, refused in :attr:`Sampling.extra`: the
prompt, the model and endpoint, the structured-output format, and one whole answer per
request (the call record keeps one)."""

_NAMED = ("temperature", "top_p", "max_tokens", "seed")
_JSON = json.JSONDecoder()


class Sampling(BaseModel):
    """Sampling settings sent with each request; None (the default) leaves a setting to
    the provider.

    ``temperature`` is in [0, 2], ``top_p`` in (0, 1], ``max_tokens`` (the answer's
    budget) at least 1 and replaces the caller's own budget; ``seed`` asks providers that
    support it for repeatable draws. ``extra`` passes other provider parameters through
    as given (``presence_penalty``, ``frequency_penalty``, ``stop``, ``extra_body``…); its
    keys are keyword names, neither the named settings nor :data:`RESERVED_PARAMS`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    temperature: float | None = Field(default=None, ge=0, le=2, strict=True)
    top_p: float | None = Field(default=None, gt=0, le=1, strict=True)
    max_tokens: int | None = Field(default=None, ge=1, strict=True)
    seed: int | None = Field(default=None, strict=True)
    extra: dict[str, JsonValue] = Field(default_factory=dict)

    @field_validator("extra")
    @classmethod
    def _pass_through_only(cls, extra: dict[str, JsonValue]) -> dict[str, JsonValue]:
        for key in extra:
            if key in _NAMED:
                raise ValueError(f"{key!r} is a named setting: give it as Sampling({key}=...)")
            if key in RESERVED_PARAMS:
                raise ValueError(f"{key!r} is set by sotopia_are itself, not a sampling setting")
            if not key.isidentifier():
                raise ValueError(f"{key!r} is not a parameter name (letters, digits, _)")
        return extra

    def params(self) -> dict[str, JsonValue]:
        """The request parameters this sends: the settings given, then ``extra``."""
        named: dict[str, JsonValue] = {
            name: getattr(self, name) for name in _NAMED if getattr(self, name) is not None
        }
        return {**named, **self.extra}

    def merged(self, other: Sampling) -> Sampling:
        """These settings with those ``other`` was given explicitly (None included: the
        provider's default again) replacing them; ``extra`` is merged key by key.

        ``DEFAULT_JUDGE_SAMPLING.merged(Sampling.parse("seed=3"))`` keeps temperature 0;
        ``Sampling.parse("temperature=null")`` in its place gives it back to the provider.
        """
        given = other.model_dump(include=other.model_fields_set - {"extra"})
        return self.model_copy(update={**given, "extra": {**self.extra, **other.extra}})

    def __or__(self, other: Sampling) -> Sampling:
        """``self.merged(other)``."""
        return self.merged(other)

    def __str__(self) -> str:
        """The settings as :meth:`parse` reads them (empty for ``Sampling()``)."""
        # Not params(): a None in extra is kept, so parse gives back an equal value.
        items = [(n, getattr(self, n)) for n in _NAMED if getattr(self, n) is not None]
        return ",".join(
            f"{key}={json.dumps(value, ensure_ascii=False, separators=(',', ':'))}"
            for key, value in [*items, *self.extra.items()]
        )

    @classmethod
    def parse(cls, text: str) -> Self:
        """The settings written as ``key=value`` items separated by commas, e.g.
        ``temperature=0.7,top_p=0.9,seed=3,presence_penalty=0.1``.

        A value is JSON (a number, ``true``, ``null``, a quoted string, a list or an
        object, commas inside it included), else the bare text up to the next comma as a
        string. Keys other than the named settings go to ``extra``; ``null`` for a named
        setting leaves it to the provider (see :meth:`merged`). An empty text is
        ``Sampling()``. ``ValueError`` naming the item that is not a valid setting.
        """
        fields: dict[str, Any] = {}
        extra: dict[str, JsonValue] = {}
        position, end = 0, len(text)
        while position < end:
            equals = text.find("=", position)
            comma = text.find(",", position)
            if equals < 0 or (0 <= comma < equals):
                item = text[position : comma if comma >= 0 else end].strip()
                if not item:  # a stray comma, e.g. a trailing one
                    position = comma + 1 if comma >= 0 else end
                    continue
                raise ValueError(f"sampling item {item!r} is not key=value")
            start, key = position, text[position:equals].strip()
            value, position = _value(text, equals + 1, key)
            if not key.isidentifier():
                item = text[start:position].rstrip(",").strip()
                raise ValueError(f"sampling item {item!r}: {key!r} is not a parameter name")
            if key in fields or key in extra:
                raise ValueError(f"sampling item {key!r} is given twice")
            (fields if key in _NAMED else extra)[key] = value
        try:
            return cls.model_validate({**fields, "extra": extra})
        except ValidationError as error:
            raise ValueError(f"sampling {text!r}: {_problems(error)}") from None


def _value(text: str, start: int, key: str) -> tuple[JsonValue, int]:
    """The value of item ``key`` starting at ``start``, and where the next item starts."""
    comma = text.find(",", start)
    bare_end = comma if comma >= 0 else len(text)
    begin = start + len(text[start:bare_end]) - len(text[start:bare_end].lstrip())
    try:
        value, stop = _JSON.raw_decode(text, begin)
    except json.JSONDecodeError:
        pass
    else:
        rest = text[stop:].lstrip()
        if not rest or rest.startswith(","):
            following = text.find(",", stop)
            return value, following + 1 if following >= 0 else len(text)
    bare = text[start:bare_end].strip()
    if not bare:
        raise ValueError(f"sampling item {key!r} has no value (write {key}=<value>)")
    return bare, bare_end + 1


def _problems(error: ValidationError) -> str:
    """``error`` as ``field: message`` items."""
    items = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "sampling"
        items.append(f"{where}: {problem['msg'].removeprefix('Value error, ')}")
    return "; ".join(items)


DEFAULT_JUDGE_SAMPLING = Sampling(temperature=0.0)
"""The judge's sampling unless given: temperature 0, so the rating does not depend on the
draw (other settings stay the provider's)."""
