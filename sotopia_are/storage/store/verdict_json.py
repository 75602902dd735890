"""`verdict_json`: a verdict as the JSON an ``EpisodeLog`` keeps, without pydantic's
``JsonValue`` serializer for its calls' free-form JSON.

A verdict is kept as its ``model_dump(mode="json")``. Its judge calls' ``params`` (the
answer's JSON schema: some 200 values) and ``parsed`` (the answer) are ``JsonValue``
fields, whose serializer calls a Python function (pydantic's ``_get_type_name``, the
union's discriminator) for every value: some 600,000 instructions of a batch verdict's
900,000-instruction dump. pydantic-core's own inference (``to_jsonable_python``) dumps
such a value without calling Python, and gives what ``JsonValue`` gives whenever it gives
back a value equal to the one it was given; the rest of the verdict is dumped by its
models as before, the two fields excluded and put back in their places.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_jsonable_python

from sotopia_are.evaluation import Evaluation
from sotopia_are.llm import LLMCall
from sotopia_are.record import Verdict

__all__ = ["verdict_json"]

_FREE_FORM = ("params", "parsed")
"""The ``JsonValue`` fields of an ``LLMCall``, dumped by :func:`_json_copy`."""

_WITHOUT_FREE_FORM = {"evaluation": {"calls": {"__all__": set(_FREE_FORM)}}}
"""``model_dump``'s ``exclude`` of a verdict's :data:`_FREE_FORM` fields."""

_NOT_PLAIN = object()
"""What :func:`_json_copy` answers for a value it does not copy."""


def verdict_json(verdict: Verdict) -> dict[str, Any]:
    """``verdict.model_dump(mode="json")``: the same dict, key for key in the same order,
    value for value of the same types (``NaN`` and infinities kept as floats, as
    ``JsonValue`` keeps them), and the same warnings (none) or errors.

    Its calls' free-form JSON is copied by pydantic-core when it is plain JSON (see
    :func:`_json_copy`); a verdict, evaluation or call of a subclass (dumped with fields
    of its own or not), or a value that is not plain JSON, is dumped the usual way whole.
    """
    evaluation = verdict.evaluation
    calls = evaluation.calls
    if (
        not calls
        or type(verdict) is not Verdict
        or type(evaluation) is not Evaluation
        or any(type(call) is not LLMCall for call in calls)
    ):
        return verdict.model_dump(mode="json")
    copies = []
    for call in calls:
        params, parsed = _json_copy(call.params), _json_copy(call.parsed)
        if params is _NOT_PLAIN or parsed is _NOT_PLAIN:
            return verdict.model_dump(mode="json")
        copies.append((params, parsed))
    dumped = verdict.model_dump(mode="json", exclude=_WITHOUT_FREE_FORM)
    dumped_calls = dumped["evaluation"]["calls"]
    for number, (params, parsed) in enumerate(copies):
        rest = dumped_calls[number]
        # In the fields' order, as the whole call's dump has them.
        dumped_calls[number] = {
            name: params if name == "params" else parsed if name == "parsed" else rest[name]
            for name in LLMCall.model_fields
        }
    return dumped


def _json_copy(value: Any) -> Any:
    """``value`` as ``JsonValue``'s ``model_dump(mode="json")`` gives it, copied by
    pydantic-core's inference, or :data:`_NOT_PLAIN`.

    For JSON (dicts with text keys, lists, text, integers, floats, booleans, None: all a
    validated ``JsonValue`` holds) the two give the same: dicts and lists copied, every
    scalar as it is (a non-finite float too, kept by ``inf_nan_mode="constants"``).
    Another value (a tuple, a set, bytes, a plain enum, a date, a dict with other keys,
    an object) ``JsonValue`` dumps with a warning, or refuses: its copy compares unequal
    to it or is refused, and it is answered :data:`_NOT_PLAIN`. What compares equal to
    its copy besides JSON is a subclass of JSON's kinds (an ``IntEnum``, a ``str``
    subclass, an ``OrderedDict``), which both dump alike and without a warning, or an
    object whose ``__eq__`` says so whatever it is given (then only the warning
    ``JsonValue`` gives for an unknown type is not given; a validated call holds none)."""
    try:
        copied = to_jsonable_python(value, inf_nan_mode="constants")
        if copied == value:
            return copied
    except Exception:  # refused, or an __eq__ raising: the usual way raises or warns
        pass
    return _NOT_PLAIN
