"""Profiles: characters, scenarios and relationships, with Sotopia's field names.

`AgentProfile`, `EnvironmentProfile` and `RelationshipProfile` keep the fields of
``sotopia.database.persistent_profile`` so Sotopia users and data feel at home; they are
``HashModel`` records (see :mod:`.stored_model`), so list fields are stored as JSON text.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Annotated

from sotopia_are.storage.fields import AS_JSON_TEXT
from sotopia_are.storage.redis_om_import import Field
from sotopia_are.storage.stored_model import StoredModel

__all__ = ["AgentProfile", "EnvironmentProfile", "RelationshipProfile", "RelationshipType"]


class RelationshipType(IntEnum):
    """How two agents know each other (Sotopia's numbering)."""

    stranger = 0
    know_by_name = 1
    acquaintance = 2
    friend = 3
    romantic_relationship = 4
    family_member = 5


class AgentProfile(StoredModel, index=True):  # type: ignore[call-arg]
    """A character: who an agent plays."""

    first_name: str
    last_name: str = ""
    age: int = 0
    occupation: str = ""
    gender: str = ""
    gender_pronoun: str = ""
    public_info: str = ""
    big_five: str = ""
    moral_values: Annotated[list[str], AS_JSON_TEXT] = Field(default_factory=list)
    schwartz_personal_values: Annotated[list[str], AS_JSON_TEXT] = Field(default_factory=list)
    personality_and_values: str = ""
    decision_making_style: str = ""
    secret: str = ""
    mbti: str = ""
    model_id: str = ""
    tag: str = ""

    class Meta:
        model_key_prefix = "AgentProfile"

    @property
    def name(self) -> str:
        """The full name, as it appears in transcripts."""
        return f"{self.first_name} {self.last_name}".strip()


class EnvironmentProfile(StoredModel, index=True):  # type: ignore[call-arg]
    """A scenario: the situation, one social goal per agent, and how the agents relate.

    Goals may carry ``<extra_info>``, ``<strategy_hint>`` and ``<clarification_hint>``
    tags, as Sotopia's do. The constraints are Sotopia's Python-literal strings, kept as
    given.
    """

    codename: str = ""
    source: str = ""
    scenario: str = ""
    agent_goals: Annotated[list[str], AS_JSON_TEXT] = Field(default_factory=list)
    relationship: RelationshipType = RelationshipType.stranger
    age_constraint: str | None = None
    occupation_constraint: str | None = None
    agent_constraint: Annotated[list[list[str]], AS_JSON_TEXT] | None = None
    tags: Annotated[list[str], AS_JSON_TEXT] = Field(default_factory=list)

    class Meta:
        model_key_prefix = "EnvironmentProfile"


class RelationshipProfile(StoredModel, index=True):  # type: ignore[call-arg]
    """How two agents (by profile pk) know each other, and their shared story."""

    agent_1_id: str
    agent_2_id: str
    relationship: RelationshipType = RelationshipType.stranger
    background_story: str | None = None

    class Meta:
        model_key_prefix = "RelationshipProfile"
