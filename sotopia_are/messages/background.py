"""`ScriptBackground`: the scenario, and each participant's name, background and goal."""

import re
from typing import Any

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from .message import Message

__all__ = ["ScriptBackground", "join_names"]

_TWO_PARTICIPANT_FIELDS = {
    "agent_names": ("p1_name", "p2_name"),
    "agent_backgrounds": ("p1_background", "p2_background"),
    "agent_goals": ("p1_goal", "p2_goal"),
}


# Unicode's control characters (general category Cc), a set its stability policy fixes:
# one search of a name instead of a category lookup per character.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def join_names(names: list[str]) -> str:
    """Join names as prose: ``A``, ``A and B``, ``A, B and C``."""
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + f" and {names[-1]}"


class ScriptBackground(Message):
    """The context of an episode for any number (≥ 2) of participants.

    Sotopia's two-participant form (``p1_name=…, p2_goal=…``) is accepted as constructor
    arguments and read back through the ``p1_*``/``p2_*`` properties. With exactly two
    participants, ``model_dump``/``model_dump_json`` also carry the ``p1_*``/``p2_*`` keys
    for Sotopia-shaped consumers, and ``model_validate`` accepts them next to the
    ``agent_*`` lists when the two agree.

    Names are non-blank, hold no control characters (a name is printed, prompted and
    parsed on one line) and stay distinct when case and runs of whitespace are ignored
    (``Bo Chen``, ``bo  chen``): a reader could not tell such twins apart.
    """

    scenario: str = Field(description="scenario of the episode")
    agent_names: list[str] = Field(description="names of all participants", min_length=2)
    agent_backgrounds: list[str] = Field(description="backgrounds of all participants")
    agent_goals: list[str] = Field(description="goals of all participants")

    # An explicit signature so type checkers accept both spellings; the before-validator
    # does the conversion, so `model_validate` of a Sotopia dict works the same way.
    def __init__(
        self,
        *,
        scenario: str,
        agent_names: list[str] | None = None,
        agent_backgrounds: list[str] | None = None,
        agent_goals: list[str] | None = None,
        p1_name: str | None = None,
        p2_name: str | None = None,
        p1_background: str | None = None,
        p2_background: str | None = None,
        p1_goal: str | None = None,
        p2_goal: str | None = None,
    ) -> None:
        given = {
            "scenario": scenario,
            "agent_names": agent_names,
            "agent_backgrounds": agent_backgrounds,
            "agent_goals": agent_goals,
            "p1_name": p1_name,
            "p2_name": p2_name,
            "p1_background": p1_background,
            "p2_background": p2_background,
            "p1_goal": p1_goal,
            "p2_goal": p2_goal,
        }
        super().__init__(**{key: value for key, value in given.items() if value is not None})

    @model_validator(mode="before")
    @classmethod
    def _from_two_participant_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        legacy = [key for pair in _TWO_PARTICIPANT_FIELDS.values() for key in pair]
        if not any(key in data for key in legacy):
            return data
        if any(key in data for key in _TWO_PARTICIPANT_FIELDS):
            # A dump carries both spellings; take it back when they say the same thing.
            agree = all(
                first in data
                and second in data
                and isinstance(data.get(field), list | tuple)
                and list(data[field]) == [data[first], data[second]]
                for field, (first, second) in _TWO_PARTICIPANT_FIELDS.items()
            )
            if not agree:
                raise ValueError(
                    "give either the p1_*/p2_* fields or the agent_* lists, not both "
                    "(both only when they agree, as in a model_dump)"
                )
            return {key: value for key, value in data.items() if key not in legacy}
        missing = [key for key in legacy if key not in data]
        if missing:
            raise ValueError(f"missing two-participant fields: {', '.join(missing)}")
        converted = {key: value for key, value in data.items() if key not in legacy}
        for field, (first, second) in _TWO_PARTICIPANT_FIELDS.items():
            converted[field] = [data[first], data[second]]
        return converted

    @model_validator(mode="after")
    def _same_number_of_each(self) -> "ScriptBackground":
        count = len(self.agent_names)
        if len(self.agent_backgrounds) != count or len(self.agent_goals) != count:
            raise ValueError(
                f"{count} agent_names need as many agent_backgrounds and agent_goals, got "
                f"{len(self.agent_backgrounds)} and {len(self.agent_goals)}"
            )
        seen: dict[str, str] = {}
        for name in self.agent_names:
            if not name.strip():
                raise ValueError(f"agent_names must not be blank: {self.agent_names!r}")
            if _CONTROL.search(name):
                raise ValueError(f"agent name {name!r} contains a control character")
            key = " ".join(name.split()).casefold()
            if key in seen:
                raise ValueError(
                    f"agent_names must be distinct, also ignoring case and spacing: "
                    f"{seen[key]!r} and {name!r}"
                )
            seen[key] = name
        return self

    @model_serializer(mode="wrap")
    def _with_two_participant_fields(
        self, handler: SerializerFunctionWrapHandler
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if len(self.agent_names) != 2:
            return data
        for field, pair in _TWO_PARTICIPANT_FIELDS.items():
            if field not in data:  # left out by include/exclude
                continue
            for key, value in zip(pair, data[field], strict=True):
                data[key] = value
        return data

    @property
    def p1_name(self) -> str:
        return self.agent_names[0]

    @property
    def p2_name(self) -> str:
        return self.agent_names[1]

    @property
    def p1_background(self) -> str:
        return self.agent_backgrounds[0]

    @property
    def p2_background(self) -> str:
        return self.agent_backgrounds[1]

    @property
    def p1_goal(self) -> str:
        return self.agent_goals[0]

    @property
    def p2_goal(self) -> str:
        return self.agent_goals[1]

    def to_natural_language(self) -> str:
        names = self.agent_names
        # Like Sotopia: the background lines only when some background is known, an empty
        # one shown as "Unknown"; each block of lines and the whole text stripped, so an
        # empty last background or goal leaves no trailing space.
        blocks = [
            "Here is the context of this interaction:",
            f"Scenario: {self.scenario}",
            f"Participants: {join_names(names)}",
        ]
        if any(self.agent_backgrounds):
            blocks.append(
                "\n".join(
                    f"{name}'s background: {background or 'Unknown'}"
                    for name, background in zip(names, self.agent_backgrounds, strict=True)
                ).strip()
            )
        blocks.append(
            "\n".join(
                f"{name}'s goal: {goal}" for name, goal in zip(names, self.agent_goals, strict=True)
            ).strip()
        )
        return "\n".join(blocks).strip()
