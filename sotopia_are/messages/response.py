"""`ScriptEnvironmentResponse`: whether the episode ended, and each participant's rating."""

from typing import Any

from pydantic import Field, model_validator

from .message import Message

__all__ = ["Rate", "ScriptEnvironmentResponse"]

Rate = float | tuple[float, dict[str, float]] | None
"""An overall score, or an overall score with per-dimension scores, or no rating."""

_LEGACY_LABELS = {"p1_rate": "participant 1", "p2_rate": "participant 2"}


class ScriptEnvironmentResponse(Message):
    """Termination flag, one rating per participant (in participant order) and comments.

    Sotopia's ``p1_rate=…, p2_rate=…`` are accepted and stored as ``rates`` under the
    labels ``"participant 1"`` and ``"participant 2"``; ``p1_rate``/``p2_rate`` read the
    first and second rating whatever their labels (usually agent names).
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
        if data.get("rates"):
            raise ValueError("give either p1_rate/p2_rate or rates, not both")
        converted = {key: value for key, value in data.items() if key not in _LEGACY_LABELS}
        converted["rates"] = {label: data.get(key) for key, label in _LEGACY_LABELS.items()}
        return converted

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
