"""`Sampling`: how a model samples its answers — temperature, top-p, answer length, seed.

Agents and the judge each take a :class:`Sampling`; what it sets is sent with every request
they make (:meth:`Sampling.params`), and each call's record keeps the parameters it sent
(``LLMCall.params``). A field left None is not sent, so the provider's default applies.
The judge's default is :data:`DEFAULT_JUDGE_SAMPLING` (temperature 0: a rating should not
depend on the draw); the agents' default is ``Sampling()`` (the provider's defaults).

The settings are the OpenAI chat parameters a study varies (:data:`KNOWN_SETTINGS`) and
three that local servers (vLLM, llama.cpp, Ollama's OpenAI API) take; an unknown name is
refused naming the nearest known one, so a typo is never sent as a parameter the server
ignores. Any other parameter of a provider goes in ``extra`` — written ``extra.NAME=VALUE``
— and is passed as given.

A sampling ``seed`` is the seed of a study, not of one request: agents and judges send
each request :func:`request_seed` of it and what identifies the request (the episode's
seed, who asks, the turn or sample), so the repeats of an episode draw differently and
the same study sends the same requests again.

On the command line and in environment variables a sampling is written
``temperature=0.7,top_p=0.9,seed=3,presence_penalty=0.1,extra.reasoning_effort=low``
(:meth:`Sampling.parse`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
    model_validator,
)

__all__ = [
    "AGENT_SAMPLING_ENV",
    "DEFAULT_JUDGE_SAMPLING",
    "EXTRA_PREFIX",
    "JUDGE_SAMPLING_ENV",
    "KNOWN_SETTINGS",
    "RESERVED_PARAMS",
    "Sampling",
    "request_seed",
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

KNOWN_SETTINGS = (
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "stop",
    "logit_bias",
    "top_k",
    "min_p",
    "repetition_penalty",
)
"""The settings :class:`Sampling` names, in the order they are sent and written: the
OpenAI chat parameters of sampling, then ``top_k``, ``min_p`` and
``repetition_penalty``, which vLLM, llama.cpp and Ollama take (a hosted provider may
refuse them)."""

EXTRA_PREFIX = "extra."
"""How a provider-specific parameter is written in :meth:`Sampling.parse`'s text:
``extra.NAME=VALUE`` (it goes to :attr:`Sampling.extra`)."""

# Kept in `extra` before they were named; a stored sampling that has them there is read
# with them in their fields.
_FORMERLY_EXTRA = frozenset(KNOWN_SETTINGS[4:])
_SEED_BITS = 31  # what every provider that takes a seed accepts (a signed 32-bit int)
_JSON = json.JSONDecoder()


def request_seed(study_seed: int, *parts: str | int) -> int:
    """The seed one request sends: a stable hash (blake2b) of the study's ``study_seed``
    and ``parts`` (what identifies the request in the study), in ``[0, 2**31)``.

    The same arguments give the same seed in every process and Python version; any other
    part gives an unrelated one.
    """
    text = "\x1f".join(str(part) for part in (study_seed, *parts))
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> (64 - _SEED_BITS)


def _unknown_setting(key: str) -> str:
    """Why ``key`` is not a setting, naming the nearest known one and how to pass a
    provider's own parameter."""
    nearest = difflib.get_close_matches(key, KNOWN_SETTINGS, n=1, cutoff=0.6)
    hint = f"did you mean {nearest[0]!r}? " if nearest else ""
    return (
        f"unknown sampling setting {key!r}: {hint}The settings are "
        f"{', '.join(KNOWN_SETTINGS)}; a parameter of your provider's own is passed as "
        f"given when written {EXTRA_PREFIX}{key}=VALUE (in Python: extra={{{key!r}: ...}})"
    )


class Sampling(BaseModel):
    """Sampling settings sent with each request; None (the default) leaves a setting to
    the provider.

    ``temperature`` is in [0, 2], ``top_p`` in (0, 1], ``max_tokens`` (the answer's
    budget) at least 1 and replaces the caller's own budget; ``seed`` is the study's seed:
    each request sends a seed derived from it (see :meth:`params`). ``presence_penalty``
    and ``frequency_penalty`` are in [-2, 2], ``stop`` is a text or a list of texts,
    ``logit_bias`` maps token ids to a bias in [-100, 100]; ``top_k`` (-1 or 0: off, as
    the server reads it), ``min_p`` in [0, 1] and ``repetition_penalty`` (above 0) are for
    local servers. ``extra`` passes a provider's other parameters through as given
    (``reasoning_effort``, ``extra_body``…); its keys are keyword names, neither the
    named settings nor :data:`RESERVED_PARAMS`. An unknown keyword is a ``ValueError``
    naming the nearest setting.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    temperature: float | None = Field(default=None, ge=0, le=2, strict=True)
    top_p: float | None = Field(default=None, gt=0, le=1, strict=True)
    max_tokens: int | None = Field(default=None, ge=1, strict=True)
    seed: int | None = Field(default=None, strict=True)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2, strict=True)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2, strict=True)
    stop: str | list[str] | None = None
    logit_bias: dict[str, float] | None = None
    top_k: int | None = Field(default=None, ge=-1, strict=True)
    min_p: float | None = Field(default=None, ge=0, le=1, strict=True)
    repetition_penalty: float | None = Field(default=None, gt=0, strict=True)
    extra: dict[str, JsonValue] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _known_settings(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        # Read once: each read of the class's ``model_fields`` is a descriptor call of
        # pydantic's (some 1.5 µs), and a batch validates every agent's sampling a few
        # times an episode.
        fields = cls.model_fields
        for key in data:
            if key not in fields:
                raise ValueError(_unknown_setting(str(key)))
        extra = data.get("extra")
        moved = _FORMERLY_EXTRA.intersection(extra) if isinstance(extra, dict) else set()
        if not moved or not isinstance(extra, dict):
            return data
        # A sampling stored before these were named kept them in extra.
        kept = {key: value for key, value in extra.items() if key not in moved}
        return {**{key: extra[key] for key in moved}, **data, "extra": kept}

    @field_validator("logit_bias")
    @classmethod
    def _bias_range(cls, bias: dict[str, float] | None) -> dict[str, float] | None:
        for token, value in (bias or {}).items():
            if not -100 <= value <= 100:
                raise ValueError(f"the bias of token {token!r} is {value}, not in [-100, 100]")
        return bias

    @field_validator("extra")
    @classmethod
    def _pass_through_only(cls, extra: dict[str, JsonValue]) -> dict[str, JsonValue]:
        for key in extra:
            if key in KNOWN_SETTINGS:
                raise ValueError(f"{key!r} is a named setting: give it as Sampling({key}=...)")
            if key in RESERVED_PARAMS:
                raise ValueError(f"{key!r} is set by sotopia_are itself, not a sampling setting")
            if not key.isidentifier():
                raise ValueError(f"{key!r} is not a parameter name (letters, digits, _)")
        return extra

    def params(self, *draw: str | int) -> dict[str, JsonValue]:
        """The request parameters this sends: the settings given, then ``extra``.

        ``draw`` identifies one request in the study (e.g. the episode's seed, the agent
        and the turn); with a ``seed``, the request sends :func:`request_seed` of the
        seed and ``draw`` in its place, so two requests that differ in ``draw`` draw
        differently and the same request draws alike in every run. Without ``draw`` the
        seed is sent as it is.
        """
        # Read from the fields' dict: asked for every request, and a lookup there costs
        # less than an attribute read.
        fields = self.__dict__
        named: dict[str, JsonValue] = {
            name: fields[name] for name in KNOWN_SETTINGS if fields[name] is not None
        }
        if self.seed is not None and draw:
            named["seed"] = request_seed(self.seed, *draw)
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
        items = [(n, getattr(self, n)) for n in KNOWN_SETTINGS if getattr(self, n) is not None]
        extra = [(f"{EXTRA_PREFIX}{key}", value) for key, value in self.extra.items()]
        return ",".join(
            f"{key}={json.dumps(value, ensure_ascii=False, separators=(',', ':'))}"
            for key, value in [*items, *extra]
        )

    @classmethod
    def parse(cls, text: str) -> Self:
        """The settings written as ``key=value`` items separated by commas, e.g.
        ``temperature=0.7,top_p=0.9,seed=3,extra.reasoning_effort=low``.

        A key is one of :data:`KNOWN_SETTINGS`, or ``extra.NAME`` for a parameter of the
        provider's own (passed as given). A value is JSON (a number, ``true``, ``null``, a
        quoted string, a list or an object, commas inside it included), else the bare
        text up to the next comma as a string; ``null`` for a named setting leaves it to
        the provider (see :meth:`merged`). An empty text is ``Sampling()``.
        ``ValueError`` naming the item that is not a valid setting, and for an unknown
        key the nearest known one.
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
            name = key.removeprefix(EXTRA_PREFIX)
            if not name.isidentifier():
                item = text[start:position].rstrip(",").strip()
                raise ValueError(f"sampling item {item!r}: {name!r} is not a parameter name")
            if name in fields or name in extra:
                raise ValueError(f"sampling item {name!r} is given twice")
            if key.startswith(EXTRA_PREFIX):
                extra[name] = value
            elif key in KNOWN_SETTINGS:
                fields[key] = value
            else:
                raise ValueError(_unknown_setting(key))
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
