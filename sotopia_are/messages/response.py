"""`ScriptEnvironmentResponse`: whether the episode ended, and each participant's rating."""

from typing import Any

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
    model_validator,
)

from .message import Message

__all__ = ["Rate", "ScriptEnvironmentResponse"]

Rate = float | tuple[float, dict[str, float]] | None
"""An overall score, or an overall score with per-dimension scores, or no rating."""

_LEGACY_LABELS = {"p1_rate": "participant 1", "p2_rate": "participant 2"}
_RATE: TypeAdapter[Rate] = TypeAdapter(Rate)


class ScriptEnvironmentResponse(Message):
    """Termination flag, one rating per participant (in participant order) and comments.

    Sotopia's ``p1_rate=…, p2_rate=…`` are accepted and stored as ``rates`` under the
    labels ``"participant 1"`` and ``"participant 2"``; ``p1_rate``/``p2_rate`` read the
    first and second rating whatever their labels (usually agent names). With exactly two
    ratings, ``model_dump``/``model_dump_json`` also carry ``p1_rate``/``p2_rate`` for
    Sotopia-shaped consumers, and ``model_validate`` accepts them next to ``rates`` when
    they agree.
    """

    terminated: bool = Field(default=False, description="whether the conversation is terminated")
    rates: dict[str, Rate] = Field(
        default_factory=dict, description="rating of each participant, keyed by its label"
    )
    comments: str | None = Field(
        default=None, description="All of the comments supporting the termination and rating"
    )

    # An explicit signature so type checkers accept the two-participant spelling too.
    def __init__(
        self,
        *,
        terminated: bool = False,
        rates: dict[str, Rate] | None = None,
        p1_rate: Rate = None,
        p2_rate: Rate = None,
        comments: str | None = None,
    ) -> None:
        data: dict[str, Any] = {"terminated": terminated, "comments": comments}
        if rates is not None:
            data["rates"] = rates
        if p1_rate is not None or p2_rate is not None:
            data["p1_rate"], data["p2_rate"] = p1_rate, p2_rate
        super().__init__(**data)

    @model_validator(mode="before")
    @classmethod
    def _from_two_participant_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not any(key in data for key in _LEGACY_LABELS):
            return data
        rates = data.get("rates")
        if rates:
            # A dump carries both spellings; take it back when they say the same thing.
            if not (isinstance(rates, dict) and _same_rates(data, list(rates.values()))):
                raise ValueError(
                    "give either p1_rate/p2_rate or rates, not both (both only when they "
                    "agree, as in a model_dump)"
                )
            return {key: value for key, value in data.items() if key not in _LEGACY_LABELS}
        converted = {key: value for key, value in data.items() if key not in _LEGACY_LABELS}
        converted["rates"] = {label: data.get(key) for key, label in _LEGACY_LABELS.items()}
        return converted

    @model_serializer(mode="wrap")
    def _with_two_participant_fields(
        self, handler: SerializerFunctionWrapHandler
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        rates = data.get("rates")  # absent when left out by include/exclude
        if isinstance(rates, dict) and len(rates) == 2:
            data["p1_rate"], data["p2_rate"] = rates.values()
        return data

    def _nth_rate(self, index: int) -> Rate:
        values = list(self.rates.values())
        return values[index] if index < len(values) else None

    @property
    def p1_rate(self) -> Rate:
        return self._nth_rate(0)

    @property
    def p2_rate(self) -> Rate:
        return self._nth_rate(1)

    def to_natural_language(self) -> str:
        # Sotopia prints "Rating of participant 1" + str(rate), gluing the number onto the
        # label ("participant 19.5"); a colon keeps label and score apart.
        lines = [
            "Environment response:",
            "The conversation is terminated." if self.terminated else "",
            *(
                f"Rating of {label}: {rate}"
                for label, rate in self.rates.items()
                if rate is not None
            ),
            self.comments or "",
        ]
        # Like Sotopia: every non-blank line, each ending in a newline.
        return "".join(f"{line}\n" for text in lines for line in text.split("\n") if line.strip())


def _same_rates(data: dict[str, Any], rates: list[Any]) -> bool:
    """Whether `p1_rate`/`p2_rate` in `data` are the two `rates` (a JSON dump turns tuples
    into lists, so both are read as `Rate` before comparing)."""
    if len(rates) != 2:
        return False
    given = [data.get(key) for key in _LEGACY_LABELS]
    return [_RATE.validate_python(r) for r in given] == [_RATE.validate_python(r) for r in rates]
