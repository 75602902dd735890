"""Accounting: the record of every LLM call, and sums of records.

An :class:`LLMCall` says what was sent, what came back, what it cost and how it went,
attempt by attempt. :class:`Usage` sums calls, per episode or per batch. Both are
pydantic models, so they round-trip through JSON and can be attached to episodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from sotopia_are.llm.request import Message
from sotopia_are.llm.valid_parts import of_valid_fields

__all__ = ["Attempt", "AttemptError", "LLMCall", "ResponseSource", "Usage", "UsageTally"]

ResponseSource = Literal["network", "cache", "replay"]
AttemptError = Literal["transient", "permanent", "invalid_output", "unexpected"]


class Attempt(BaseModel):
    """One request sent for a call, and what happened to it.

    ``added_messages`` are the messages this request sent beyond the previous request's
    (the first request's are the call's ``messages``): after an invalid output, the
    rejected answer and the repair prompt; nothing for the first request or for the same
    request sent again after a transient failure (see :meth:`LLMCall.sent_messages`).
    Where the time went: ``queued_s`` waiting for a slot of the endpoint's limit in this
    process, then ``latency_s`` from sending to the answer, of which the server spent
    ``service_s`` computing it when it says so (llama.cpp's ``timings``); the rest of
    ``latency_s`` is the server's queue and the network. ``raw_text`` is the model's
    answer (``None`` if the
    request failed). ``error`` is the transport error or the output validation error;
    ``error_kind`` classifies it. ``cost_usd`` is ``None`` when unknown; answers from the
    cache or a replay cost 0. ``normalized`` lists what the output type's normalisation
    changed in an accepted answer's form (``null`` argument → ``""``…), one note each.
    """

    model_config = ConfigDict(extra="forbid")

    number: int
    added_messages: list[Message] = []
    source: ResponseSource = "network"
    latency_s: float
    queued_s: float = 0.0
    service_s: float | None = None
    raw_text: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    error: str | None = None
    error_kind: AttemptError | None = None
    normalized: list[str] = []


class LLMCall(BaseModel):
    """The record of one ``generate`` call (rule 5 of the design: every call is accounted).

    ``messages`` are those of the first request; what later requests added (the model's
    rejected answer and the repair prompt) is in each attempt's ``added_messages``, and
    :meth:`sent_messages` rebuilds any request exactly. ``parsed`` is the validated value
    as JSON (the text itself for text output), ``None`` when the call failed. Token
    counts sum every attempt that reported usage; ``cost_usd`` sums every answered attempt
    and is ``None`` when litellm does not know the price of one of them.
    """

    model_config = ConfigDict(extra="forbid")

    model: str
    api_base: str | None = None
    scope: str | None = None
    template: str
    output_type: str | None = None
    output_mode: str | None = None
    messages: list[Message]
    params: dict[str, JsonValue] = {}
    raw_text: str | None = None
    parsed: JsonValue = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float
    attempts: list[Attempt] = []
    error: str | None = None
    error_type: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the call produced a value."""
        return self.error is None

    @property
    def normalized(self) -> bool:
        """Whether the accepted answer was valid only after normalising its form."""
        return self.ok and any(a.normalized for a in self.attempts)

    @property
    def repaired(self) -> bool:
        """Whether the call produced a value only after the model was asked again with the
        problem of an invalid answer."""
        return self.ok and any(a.error_kind == "invalid_output" for a in self.attempts)

    def sent_messages(self, number: int) -> list[Message]:
        """The messages attempt ``number`` (counting from 1) sent."""
        if not 1 <= number <= len(self.attempts):
            raise ValueError(f"the call has attempts 1 to {len(self.attempts)}, not {number}")
        added = (m for attempt in self.attempts[:number] for m in attempt.added_messages)
        return [*self.messages, *added]

    @classmethod
    def from_attempts(cls, attempts: list[Attempt], **fields: object) -> LLMCall:
        """Build the record, deriving tokens and cost from ``attempts``."""
        prompt_tokens, completion_tokens, cost_usd = _derived(attempts)
        return cls.model_validate(
            {
                **fields,
                "attempts": attempts,
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "cost_usd": cost_usd,
            }
        )

    @classmethod
    def of_valid_parts(
        cls,
        attempts: list[Attempt],
        *,
        model: str,
        api_base: str | None,
        scope: str | None,
        template: str,
        output_type: str | None,
        output_mode: str | None,
        messages: list[Message],
        params: dict[str, JsonValue],
        latency_s: float,
        raw_text: str | None = None,
        parsed: JsonValue = None,
        error: str | None = None,
        error_type: str | None = None,
    ) -> LLMCall:
        """:meth:`from_attempts` of parts that are valid already, without validating
        them again: the record of every model call, where validating messages, attempts
        and parameters (a JSON schema) that were built from validated parts costs more
        than the rest of the record. Every argument must have its field's type (a float
        ``latency_s``, ``parsed`` plain JSON); the lists and the dict are kept, not copied.
        """
        prompt_tokens, completion_tokens, cost_usd = _derived(attempts)
        fields = {
            "model": model,
            "api_base": api_base,
            "scope": scope,
            "template": template,
            "output_type": output_type,
            "output_mode": output_mode,
            "messages": messages,
            "params": params,
            "raw_text": raw_text,
            "parsed": parsed,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "cost_usd": cost_usd,
            "latency_s": latency_s,
            "attempts": attempts,
            "error": error,
            "error_type": error_type,
        }
        return of_valid_fields(cls, fields)


def _derived(attempts: list[Attempt]) -> tuple[int | None, int | None, float | None]:
    """The fields of a call record that its ``attempts`` give besides themselves: the
    prompt and completion token counts and the cost."""
    # One pass (every call's record is made here): each sum adds in the attempts' order
    # from 0, as sum() does, so the numbers come out the same.
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float = 0
    answered = priced = False
    for attempt in attempts:
        read = attempt.__dict__  # (see UsageTally.add_call)
        if (tokens := read["prompt_tokens"]) is not None:
            prompt_tokens = (prompt_tokens or 0) + tokens
        if (tokens := read["completion_tokens"]) is not None:
            completion_tokens = (completion_tokens or 0) + tokens
        if read["raw_text"] is not None:
            if not answered:
                answered = priced = True
            if (price := read["cost_usd"]) is None:
                priced = False
            elif priced:
                cost += price
    return prompt_tokens, completion_tokens, cost if priced else None


_COUNTED = (
    "calls",
    "failed_calls",
    "requests",
    "prompt_tokens",
    "completion_tokens",
    "unpriced_calls",
    "normalized_calls",
    "repaired_calls",
)
"""The integer fields of :class:`Usage`, each summed over calls."""


def _fields_of_call(call: LLMCall) -> dict[str, Any]:
    """The :class:`Usage` fields of one call."""
    answered = any(a.raw_text is not None for a in call.attempts)
    return {
        "calls": 1,
        "failed_calls": 0 if call.ok else 1,
        "requests": len(call.attempts),
        "prompt_tokens": call.prompt_tokens or 0,
        "completion_tokens": call.completion_tokens or 0,
        "cost_usd": call.cost_usd,
        "unpriced_calls": 1 if answered and call.cost_usd is None else 0,
        "latency_s": call.latency_s,
        "normalized_calls": int(call.normalized),
        "repaired_calls": int(call.repaired),
    }


class Usage(BaseModel):
    """Totals over many calls: add them with ``+`` or build with :meth:`of`.

    ``cost_usd`` sums the calls whose price is known and is ``None`` when none is;
    ``unpriced_calls`` counts the answered calls whose price litellm does not know, so a
    partial sum never passes for a total. ``normalized_calls`` and ``repaired_calls``
    count the calls whose answer was accepted after normalising its form, or after asking
    the model again (see :attr:`LLMCall.normalized`, :attr:`LLMCall.repaired`).
    """

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    failed_calls: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    unpriced_calls: int = 0
    latency_s: float = 0.0
    normalized_calls: int = 0
    repaired_calls: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def describe(self) -> str:
        """``N model calls, T tokens, $C`` (the cost as far as it is known), and how many
        answers needed normalising or asking again (with a real model, part of the result)."""
        if self.calls == 0:
            return "no model calls"
        if self.cost_usd is None:
            cost = "cost unknown (no price for the model)"
        elif self.unpriced_calls:
            cost = f"${self.cost_usd:.4f} + {self.unpriced_calls} calls of unknown cost"
        else:
            cost = f"${self.cost_usd:.4f}"
        return (
            f"{self.calls} model calls, {self.total_tokens} tokens, {cost}; answers accepted "
            f"after normalising their form: {self.normalized_calls}, after asking again: "
            f"{self.repaired_calls}"
        )

    @classmethod
    def of(cls, calls: Iterable[LLMCall]) -> Usage:
        """The totals of ``calls``."""
        return cls._sum(_fields_of_call(call) for call in calls)

    @classmethod
    def of_call(cls, call: LLMCall) -> Usage:
        """The usage of one call."""
        return cls(**_fields_of_call(call))

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of ``usages`` (an empty sum is all zeros with unknown cost)."""
        return cls._sum(vars(usage) for usage in usages)

    @classmethod
    def _sum(cls, parts: Iterable[Mapping[str, Any]]) -> Usage:
        """The sum of usages given as their fields, added in order as ``+`` adds them (so
        the floats come out the same), without a model per step: a batch sums thousands."""
        tally = UsageTally()
        for part in parts:
            tally.add(part)
        return tally.usage()

    def __add__(self, other: Usage) -> Usage:
        return self._sum((vars(self), vars(other)))


class UsageTally:
    """A running sum of calls as plain numbers, for :meth:`usage` when asked: adding a
    call makes no model (a batch worker's session adds every call it makes). Adds as
    :class:`Usage`'s ``+`` does, so the floats come out the same."""

    __slots__ = ("_fields",)

    def __init__(self) -> None:
        self._fields: dict[str, Any] = {
            **dict.fromkeys(_COUNTED, 0),
            "cost_usd": None,
            "latency_s": 0.0,
        }

    def add_call(self, call: LLMCall) -> None:
        """Add ``call`` (what ``add(_fields_of_call(call))`` adds, without the dict and
        the passes over the attempts it makes: a batch worker adds every call, and the
        episode's end twice more)."""
        # The fields are read from the models' dicts: an attribute of a pydantic model is
        # looked up through its class's __getattr__ hook, several times the cost.
        fields_of = call.__dict__
        attempts = fields_of["attempts"]
        answered = normalized = repaired = False
        for attempt in attempts:
            read = attempt.__dict__
            if read["raw_text"] is not None:
                answered = True
            if read["normalized"]:
                normalized = True
            if read["error_kind"] == "invalid_output":
                repaired = True
        cost = fields_of["cost_usd"]
        fields = self._fields
        fields["calls"] += 1
        fields["requests"] += len(attempts)
        # A count that does not change is not written (most calls add no failure,
        # normalisation or repair, and a token count is rarely missing).
        if tokens := fields_of["prompt_tokens"]:
            fields["prompt_tokens"] += tokens
        if tokens := fields_of["completion_tokens"]:
            fields["completion_tokens"] += tokens
        if fields_of["error"] is not None:
            fields["failed_calls"] += 1
        else:
            if normalized:
                fields["normalized_calls"] += 1
            if repaired:
                fields["repaired_calls"] += 1
        if cost is not None:
            total = fields["cost_usd"]
            fields["cost_usd"] = cost if total is None else total + cost
        elif answered:
            fields["unpriced_calls"] += 1
        fields["latency_s"] += fields_of["latency_s"]

    def add(self, part: Mapping[str, Any]) -> None:
        """Add a usage given as its fields (``vars(usage)``)."""
        fields = self._fields
        for name in _COUNTED:
            fields[name] += part[name]
        cost = part["cost_usd"]
        if cost is not None:
            fields["cost_usd"] = cost if fields["cost_usd"] is None else fields["cost_usd"] + cost
        fields["latency_s"] += part["latency_s"]

    def usage(self) -> Usage:
        """The sum so far."""
        return Usage(**self._fields)
