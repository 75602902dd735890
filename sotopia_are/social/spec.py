"""`EpisodeSpec`: everything that defines an episode before it runs, as a pydantic model.

A spec plus the agents' decisions determine the event log: the same spec, seed and
recorded model responses give the same log, byte for byte (design rule 2).

A spec given an ``episode_id`` is that one episode. A spec without one stands for a new
episode each time it is run: :meth:`EpisodeSpec.for_run` gives it a fresh id
(:func:`fresh_episode_id`) from its ``name`` (the scenario's name, which its records keep
as their ``scenario_id``), and a batch names it by that name, else by its content
(:meth:`EpisodeSpec.stable_name`), so a resumed batch finds its episodes again.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata
from typing import Any, Literal, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from sotopia_are import SotopiaAreError
from sotopia_are.llm.valid_parts import of_valid_fields
from sotopia_are.messages import ScriptBackground
from sotopia_are.messages.action import ActionType

from .conversation_app import ENVIRONMENT_SENDER
from .game_rules import GameRules

__all__ = [
    "ALL_ACTION_TYPES",
    "HIDDEN_GOAL",
    "SAFE_ID_CHARACTERS",
    "EpisodeSpec",
    "ScheduledEnvEvent",
    "TurnPolicyName",
    "UnsafeIdError",
    "check_safe_id",
    "fresh_episode_id",
    "slug",
]

ALL_ACTION_TYPES: tuple[ActionType, ...] = get_args(ActionType)
"""Every action type, in Sotopia's order."""

HIDDEN_GOAL = "Unknown"
"""What an agent sees instead of another participant's goal (as in Sotopia)."""

TurnPolicyName = Literal["round-robin", "simultaneous", "random", "fixed"]

SAFE_ID_CHARACTERS = (
    "1 to 128 of the letters A-Z and a-z, the digits 0-9, '_', '-' and '.', "
    "not starting with '-' or '.'"
)
"""What an episode id or a tag may be made of (:func:`check_safe_id`)."""

# Ids become file names (`export -o DIR` writes DIR/<id>.json) and parts of Redis keys
# (':'-separated) and call scopes ('/'-separated): nothing here can climb out of a
# directory, hide a file, pass for an option or split a key.
_SAFE_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


class UnsafeIdError(SotopiaAreError, ValueError):
    """An episode id, tag or key that is not made of :data:`SAFE_ID_CHARACTERS`."""


def check_safe_id(value: str, what: str = "episode id", *, empty: bool = False) -> str:
    """``value`` unchanged if it is made of :data:`SAFE_ID_CHARACTERS` (or, with
    ``empty``, is empty); otherwise :class:`UnsafeIdError` naming ``what``, the value and the
    allowed set."""
    if (empty and value == "") or _SAFE_ID.fullmatch(value):
        return value
    raise UnsafeIdError(f"{what} {value!r} is not allowed: use {SAFE_ID_CHARACTERS}")


def slug(text: str, *, words: int = 4) -> str:
    """A short readable name from ``text``: its first ``words`` words of letters and
    digits, lowercased, accents dropped, joined by ``-`` (at most 40 characters;
    ``episode`` if none)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    found = re.findall(r"[a-z0-9]+", ascii_text.lower())[:words]
    return "-".join(found)[:40].strip("-") or "episode"


def fresh_episode_id(name: str) -> str:
    """A new episode id: ``name`` (made a safe id, see :func:`slug`) and 6 random hex
    digits, e.g. ``bakery-negotiation-3f9a1c``."""
    base = name if _SAFE_ID.fullmatch(name) and len(name) <= 64 else slug(name)
    return f"{base}-{secrets.token_hex(3)}"


class ScheduledEnvEvent(BaseModel):
    """Something that happens from outside the agents, just before ``turn`` is played.

    ``announce``: every participant (or only ``to``) perceives ``content``.
    ``message``: ``sender``, who is not a participant, sends ``content`` to ``to``.
    ValueError for an event that could not run: an empty ``to`` (None means everyone), a
    message without sender or recipients, or one from the reserved ``ENVIRONMENT_SENDER``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: int = Field(ge=0, description="the turn whose actors first perceive the event")
    kind: Literal["announce", "message"] = "announce"
    content: str
    to: list[str] | None = Field(default=None, description="who perceives it; None: everyone")
    sender: str | None = Field(default=None, description="the outside sender of a message")

    @model_validator(mode="after")
    def _message_fields(self) -> ScheduledEnvEvent:
        if self.kind == "message" and (not self.sender or not self.to):
            raise ValueError("a message event needs a sender and at least one recipient in to")
        if self.kind == "announce" and self.sender is not None:
            raise ValueError("an announce event has no sender; use kind='message'")
        if self.to is not None and not self.to:
            # An empty list would silently mean "everyone" downstream; make that explicit.
            raise ValueError("to is an empty list; use null for everyone")
        if self.sender == ENVIRONMENT_SENDER:
            raise ValueError(
                f"sender {ENVIRONMENT_SENDER!r} is reserved for announce events; "
                "name the outside sender of a message"
            )
        return self


class EpisodeSpec(BaseModel):
    """The scenario, the participants and the rules of play of one episode.

    ``turn_policy``: ``round-robin`` (one agent per turn, in order), ``simultaneous``
    (every active agent each turn; nobody sees a same-turn action before acting),
    ``random`` (one agent per turn, drawn with ``seed``) or ``fixed`` (``turn_order``
    names the actor of each turn, e.g. to replay a human-written script). The episode ends
    after ``max_turns`` turns, when fewer than two agents remain, or after
    more than ``max_stale_turns`` consecutive turns in which nobody did anything
    (Sotopia's rule). Turn ``n`` is
    played at simulated time ``n * turn_seconds``.

    With ``game`` set the episode is a social game (:mod:`sotopia_are.social.game_rules`):
    its phases decide who acts and what they may do, and its ``max_cycles`` bounds it, in
    place of ``turn_policy``, ``max_turns`` and ``max_stale_turns``.

    ``episode_id`` names the one episode this spec is; left out, the spec stands for a
    new episode each run (:attr:`id_given` is False; ``episode_id`` is then the
    placeholder ``"episode"`` until :meth:`for_run` gives it a fresh one). ``name``
    names the scenario rather than one episode of it (the example files carry one):
    each run's fresh id starts with it, and its records keep it as their
    ``scenario_id``.

    Example:
        ```python
        spec = EpisodeSpec(
            scenario="Two flatmates discuss who cleans the kitchen this week.",
            agent_names=["Jonas", "Aiko"],
            agent_backgrounds=["Jonas works nights.", "Aiko cooked all week."],
            agent_goals=["Swap kitchen duty for bathroom duty.", "Get Jonas to clean."],
            max_turns=10,
        )
        text = Path("examples/scenarios/phone_call.json").read_text()
        spec = EpisodeSpec.model_validate_json(text)  # a spec file
        ```
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    episode_id: str = "episode"
    name: str | None = Field(
        default=None,
        description="the scenario's name; each run gets a fresh episode id from it",
    )
    scenario: str
    agent_names: list[str] = Field(min_length=2)
    agent_backgrounds: list[str]
    agent_goals: list[str]
    relationship: str | None = Field(
        default=None, description="how the participants know each other (informational)"
    )
    turn_policy: TurnPolicyName = "round-robin"
    turn_order: list[str] | None = None
    max_turns: int = Field(default=20, ge=1)
    max_stale_turns: int = Field(default=2, ge=0)
    seed: int = 0
    omniscient: bool = Field(default=False, description="whether agents see each other's goals")
    turn_seconds: float = Field(default=1.0, gt=0)
    action_types: list[ActionType] = Field(default_factory=lambda: list(ALL_ACTION_TYPES))
    env_events: list[ScheduledEnvEvent] = Field(default_factory=list)
    game: GameRules | None = Field(
        default=None, description="the rules of a social game; None for a conversation"
    )

    @field_validator("episode_id")
    @classmethod
    def _safe_episode_id(cls, episode_id: str) -> str:
        return check_safe_id(episode_id)

    @field_validator("name")
    @classmethod
    def _safe_name(cls, name: str | None) -> str | None:
        # A name becomes part of episode ids and is what a study's records are listed by.
        return None if name is None else check_safe_id(name, "scenario name")

    @model_validator(mode="after")
    def _consistent(self) -> EpisodeSpec:
        # Building the background checks counts and distinct names in one place (a cast
        # that validated before is known to: see _cast_of).
        cast = _cast_of(
            {
                "scenario": self.scenario,
                "agent_names": self.agent_names,
                "agent_backgrounds": self.agent_backgrounds,
                "agent_goals": self.agent_goals,
            }
        )
        if cast is None or cast not in _VALID_CASTS:
            self.background()
        names = self.agent_names
        if ENVIRONMENT_SENDER in names:
            raise ValueError(f"{ENVIRONMENT_SENDER!r} is reserved and cannot be an agent name")
        if (self.turn_policy == "fixed") != (self.turn_order is not None):
            raise ValueError("turn_order is given exactly when turn_policy is 'fixed'")
        if self.turn_order is not None and len(self.turn_order) < self.max_turns:
            raise ValueError(
                f"turn_order names {len(self.turn_order)} turns but max_turns is {self.max_turns}"
            )
        for actor in self.turn_order or []:
            if actor not in names:
                raise ValueError(f"turn_order names {actor!r}, who is not one of {names}")
        if self.game is not None:
            if self.game.seats != len(names):
                raise ValueError(
                    f"game.roles: the roles have {self.game.seats} seats but there are "
                    f"{len(names)} agent_names"
                )
            if self.turn_policy != "round-robin":
                raise ValueError("turn_policy: a game's phases say who acts; leave it out")
        for index, event in enumerate(self.env_events):
            unknown = [name for name in event.to or [] if name not in names]
            if unknown:
                raise ValueError(f"env_events[{index}].to names non-participants {unknown}")
            if event.sender in names:
                raise ValueError(
                    f"env_events[{index}].sender {event.sender!r} is a participant; "
                    "participants act, they do not send env messages"
                )
        return self

    @model_serializer(mode="wrap")
    def _conversation_without_game(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A conversation's spec is written as before games existed: its stored records,
        # exports and content id stay byte for byte the same.
        data = handler(self)
        if self.game is None and isinstance(data, dict):
            data.pop("game", None)
        return data

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (e.g. a new ``episode_id``), of this spec's own class,
        validated again (a ``model_copy`` would skip the spec's checks). A spec without an
        id of its own stays so unless ``changes`` give one."""
        data = self.model_dump()
        if not self.id_given:
            del data["episode_id"]
        return type(self).model_validate({**data, **changes})

    @property
    def id_given(self) -> bool:
        """Whether ``episode_id`` was given (else each run gets a fresh one)."""
        return "episode_id" in self.model_fields_set

    def for_run(self) -> Self:
        """The spec one run plays: this one if its id was given, else a copy under a fresh
        id (:func:`fresh_episode_id` of ``name``, else of the scenario's :func:`slug`)."""
        if self.id_given:
            return self
        return self.replace(episode_id=fresh_episode_id(self.name or slug(self.scenario)))

    def content_id(self) -> str:
        """A name for what this spec plays, whatever its id and name: the scenario's
        :func:`slug` and 8 hex digits of a hash of every other field, so equal specs get
        the same."""
        # Without the name, ids planned before specs had one are planned again.
        played = self.model_dump_json(exclude={"episode_id", "name"})
        return f"{slug(self.scenario)}-{hashlib.sha256(played.encode()).hexdigest()[:8]}"

    def stable_name(self) -> str:
        """What a study calls this spec, the same in every run (a batch's episode ids are
        made from it): the ``episode_id`` if given, else ``name``, else
        :meth:`content_id`."""
        if self.id_given:
            return self.episode_id
        return self.name if self.name is not None else self.content_id()

    def time_of_turn(self, turn_number: int) -> float:
        """The simulated time at which ``turn_number`` is played."""
        return turn_number * self.turn_seconds

    @classmethod
    def from_background(cls, background: ScriptBackground, episode_id: str) -> EpisodeSpec:
        """A spec with ``background``'s scenario, participants, backgrounds and goals, and
        the default rules of play."""
        return cls(
            episode_id=episode_id,
            scenario=background.scenario,
            agent_names=list(background.agent_names),
            agent_backgrounds=list(background.agent_backgrounds),
            agent_goals=list(background.agent_goals),
        )

    def background(self) -> ScriptBackground:
        """The full background: every participant's goal shown (the evaluator's view)."""
        fields: dict[str, Any] = {
            "scenario": self.scenario,
            "agent_names": list(self.agent_names),
            "agent_backgrounds": list(self.agent_backgrounds),
            "agent_goals": list(self.agent_goals),
        }
        cast = _cast_of(fields)
        if cast is not None and cast in _VALID_CASTS:
            return of_valid_fields(ScriptBackground, fields)
        background = ScriptBackground(**fields)
        if cast is not None:
            if len(_VALID_CASTS) >= _KEPT_CASTS:
                _VALID_CASTS.clear()
            _VALID_CASTS[cast] = None
        return background

    def background_for(self, viewer: str) -> ScriptBackground:
        """``viewer``'s background: its own goal, the others' hidden unless omniscient."""
        if viewer not in self.agent_names:
            raise ValueError(f"{viewer!r} is not one of {self.agent_names}")
        goals = [
            goal if self.omniscient or name == viewer else HIDDEN_GOAL
            for name, goal in zip(self.agent_names, self.agent_goals, strict=True)
        ]
        # Not validated again: the spec validated its background when it was made (see
        # _consistent; it is frozen), and hiding goals keeps one text per participant.
        # Validating the names once per viewer was most of making an episode's views.
        return of_valid_fields(
            ScriptBackground,
            {
                "scenario": self.scenario,
                "agent_names": list(self.agent_names),
                "agent_backgrounds": list(self.agent_backgrounds),
                "agent_goals": goals,
            },
        )


_VALID_CASTS: dict[tuple[tuple[str, ...], int, int], None] = {}
"""The casts (see :func:`_cast_of`) whose background validated: a batch's specs share a
few, and every spec's validation builds its background (``_consistent``), about 60 % of
validating a spec, four times an episode in a stored batch."""
_KEPT_CASTS = 256
_ONLY_STR = frozenset({str})


def _cast_of(fields: dict[str, Any]) -> tuple[tuple[str, ...], int, int] | None:
    """What validating a :class:`ScriptBackground` of ``fields`` depends on, when every
    text in them is an exact ``str``: the names and the counts of backgrounds and goals
    (its checks are the counts, the names' blanks, control characters and twins; the
    texts are kept as they are). None otherwise (it is validated)."""
    names, backgrounds, goals = (
        fields["agent_names"],
        fields["agent_backgrounds"],
        fields["agent_goals"],
    )
    if type(fields["scenario"]) is not str or not _ONLY_STR.issuperset(
        map(type, [*names, *backgrounds, *goals])
    ):
        return None
    return tuple(names), len(backgrounds), len(goals)
