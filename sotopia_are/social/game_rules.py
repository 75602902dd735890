"""`GameRules`: a social game as data — roles, phases, legal actions, resolutions, ends.

An episode spec with ``game`` set is a game: its participants are dealt the roles (by the
spec's seed), then the phases are played in order, again and again (one *cycle* is one pass
through them), until an end condition holds or ``max_cycles`` cycles were played. The rules
are data only; :mod:`sotopia_are.games` plays them on the event kernel.

Who sees what: an action's ``audience`` is ``everyone``, ``team`` (the actor's living
teammates), ``actor`` (the actor alone) or ``moderator`` (no participant but the actor; the
evaluator's view shows it). A rules value that contradicts itself — a phase nobody can act
in, an end that can never hold, an action without a resolution — is refused when it is
validated, naming the field.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "ActionKind",
    "Audience",
    "EndCondition",
    "GameAction",
    "GameRules",
    "Payoff",
    "Phase",
    "Role",
    "RoleActors",
    "TeamActors",
]

ActionKind = Literal["speak", "target", "offer", "accept", "reject", "pass"]
"""``speak``: say something; ``target``: choose a participant (a vote, a kill, an
inspection...); ``offer``: propose an amount; ``accept``/``reject``: answer the standing
offer; ``pass``: do nothing this time (an optional ability not used)."""

Audience = Literal["everyone", "team", "actor", "moderator"]

Targets = Literal["living_others", "living", "outside_team", "team_others"]
"""Whom a ``target`` action may aim at: the living others, the living (oneself included),
the living outside one's team, or one's living teammates."""

Effect = Literal["eliminate", "protect", "reveal_role", "reveal_team", "none"]
"""What resolving a target does: ``eliminate`` (unless protected this cycle), ``protect``
(the target survives elimination this cycle), ``reveal_role``/``reveal_team`` (the actor
alone is told the target's role or team), ``none`` (a target that only counts, e.g. a
bid)."""

_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")


def _name(value: str, what: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} must be 1 to 40 lowercase letters, digits, '_' or '-', "
            "starting with a letter"
        )
    return value


class Payoff(BaseModel):
    """A role's payoff: ``win`` or ``lose``; in a deal, ``base + per_unit * amount`` (the
    accepted offer's amount), ``no_deal`` when the game ends without one.

    Whole numbers: offers' amounts are whole, so every payoff is, and the outcome verdict
    scores it as a judge scores a dimension (in whole points). A fraction (``0.5``) is
    refused naming the field; scale the game's payoffs (e.g. cents) instead."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    win: int = 1
    lose: int = 0
    base: int = 0
    per_unit: int = 0
    no_deal: int = 0


class Role(BaseModel):
    """``count`` seats of this role, on ``team``; ``description`` (what the role is and may
    do) and ``goal`` are told to its holders alone; with ``knows_team`` they are also told
    who their teammates are."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    team: str
    count: int = Field(default=1, ge=1)
    description: str = ""
    goal: str = ""
    knows_team: bool = False
    payoff: Payoff = Field(default_factory=Payoff)

    @field_validator("name", "team")
    @classmethod
    def _names(cls, value: str) -> str:
        return _name(value, "a role or team name")


class RoleActors(BaseModel):
    """The living holders of one role act."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str


class TeamActors(BaseModel):
    """The living members of one team act."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    team: str


class GameAction(BaseModel):
    """One action a phase allows.

    ``target`` actions choose among ``targets``; with ``resolution`` ``plurality`` the
    phase's choices of this action are counted and the one most chosen is resolved (ties
    by ``tie``: nobody, or drawn with the spec's seed), with ``each`` every choice is
    resolved. ``uses_per_game`` bounds how often one player may take it (a witch's potion).
    ``offer`` actions propose an amount between ``amount_min`` and ``amount_max``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    kind: ActionKind
    description: str = ""
    audience: Audience = "everyone"
    targets: Targets = "living_others"
    effect: Effect = "none"
    resolution: Literal["plurality", "each"] = "each"
    tie: Literal["no_one", "random"] = "no_one"
    uses_per_game: int | None = Field(default=None, ge=1)
    amount_min: int = 0
    amount_max: int = 100

    @field_validator("name")
    @classmethod
    def _action_name(cls, value: str) -> str:
        return _name(value, "an action name")

    @model_validator(mode="after")
    def _consistent(self) -> GameAction:
        if self.kind == "target" and self.effect == "none" and self.resolution == "each":
            raise ValueError(
                f"action {self.name!r}: a target action needs an effect or a plurality "
                "resolution, else choosing a target changes nothing"
            )
        if self.kind != "target" and self.effect != "none":
            raise ValueError(f"action {self.name!r}: only a target action has an effect")
        if self.kind == "offer" and self.amount_min > self.amount_max:
            raise ValueError(
                f"action {self.name!r}: amount_min {self.amount_min} > amount_max {self.amount_max}"
            )
        return self


class Phase(BaseModel):
    """A part of a cycle: ``actors`` (``"living"``, ``{"role": r}`` or ``{"team": t}``)
    act ``rounds`` times in ``order`` — ``round-robin`` (one at a time, each seeing the
    previous), ``simultaneous`` (all choose before any choice is seen) or ``bids`` (all bid
    at once, the highest bidder acts; ties drawn with the seed) — choosing each time one of
    ``actions``. ``announce`` is told to everyone when the phase begins."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    actors: Literal["living"] | RoleActors | TeamActors = "living"
    order: Literal["round-robin", "simultaneous", "bids"] = "round-robin"
    rounds: int = Field(default=1, ge=1)
    actions: list[GameAction] = Field(min_length=1)
    announce: str = ""

    @field_validator("name")
    @classmethod
    def _phase_name(cls, value: str) -> str:
        return _name(value, "a phase name")

    @model_validator(mode="after")
    def _distinct_actions(self) -> Phase:
        names = [action.name for action in self.actions]
        for index, name in enumerate(names):
            if name in names[:index]:
                raise ValueError(f"phase {self.name!r}: two actions are named {name!r}")
        return self


class EndCondition(BaseModel):
    """When the game ends and who wins.

    ``team_eliminated``: no living member of ``team`` is left; ``team_parity``: the living
    members of ``team`` are at least as many as all others; ``deal``: an offer was
    accepted. ``winners`` are the teams that win then.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    when: Literal["team_eliminated", "team_parity", "deal"]
    team: str | None = None
    winners: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _team_given(self) -> EndCondition:
        if (self.when == "deal") != (self.team is None):
            raise ValueError(f"end condition {self.when!r}: team is given exactly when not 'deal'")
        return self


class GameRules(BaseModel):
    """The rules of a game: ``roles`` (their counts add up to the participants),
    ``phases`` (one cycle, played in order), ``ends`` (checked after every resolution and
    every move) and ``max_cycles`` (the bound: the game ends without winners after that
    many cycles)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    roles: list[Role] = Field(min_length=1)
    phases: list[Phase] = Field(min_length=1)
    ends: list[EndCondition] = Field(min_length=1)
    max_cycles: int = Field(default=10, ge=1)

    @property
    def seats(self) -> int:
        """How many participants the game needs."""
        return sum(role.count for role in self.roles)

    @property
    def teams(self) -> tuple[str, ...]:
        """The teams, in the order their first role is listed."""
        return tuple(dict.fromkeys(role.team for role in self.roles))

    def role(self, name: str) -> Role:
        """The role named ``name``; KeyError if there is none."""
        for role in self.roles:
            if role.name == name:
                return role
        raise KeyError(name)

    @model_validator(mode="after")
    def _consistent(self) -> GameRules:
        role_names = [role.name for role in self.roles]
        for index, name in enumerate(role_names):
            if name in role_names[:index]:
                raise ValueError(f"roles[{index}].name: two roles are named {name!r}")
        teams = set(self.teams)
        phase_names = [phase.name for phase in self.phases]
        kinds: set[str] = set()
        for index, phase in enumerate(self.phases):
            if phase.name in phase_names[:index]:
                raise ValueError(f"phases[{index}].name: two phases are named {phase.name!r}")
            where = f"phases[{index}] ({phase.name!r})"
            actors = phase.actors
            if isinstance(actors, RoleActors) and actors.role not in role_names:
                raise ValueError(
                    f"{where}.actors: no role is named {actors.role!r}, so nobody can act "
                    f"in it (roles: {role_names})"
                )
            if isinstance(actors, TeamActors) and actors.team not in teams:
                raise ValueError(
                    f"{where}.actors: no team is named {actors.team!r}, so nobody can act in "
                    f"it (teams: {sorted(teams)})"
                )
            for action in phase.actions:
                kinds.add(action.kind)
                if action.targets == "outside_team" and len(teams) < 2:
                    raise ValueError(
                        f"{where}.actions ({action.name!r}).targets: 'outside_team' needs a "
                        "second team"
                    )
        if "offer" in kinds and "accept" not in kinds:
            raise ValueError("phases: an offer can be made but no phase lets anyone accept it")
        if kinds & {"accept", "reject"} and "offer" not in kinds:
            raise ValueError("phases: an offer can be accepted or rejected but none can be made")
        eliminates = any(
            action.effect == "eliminate" for phase in self.phases for action in phase.actions
        )
        for index, end in enumerate(self.ends):
            where = f"ends[{index}]"
            if end.team is not None and end.team not in teams:
                raise ValueError(f"{where}.team: no team is named {end.team!r}")
            unknown = [team for team in end.winners if team not in teams]
            if unknown:
                raise ValueError(f"{where}.winners: no team is named {unknown}")
            if end.when == "deal" and "accept" not in kinds:
                raise ValueError(f"{where}: the game ends on a deal but no offer can be accepted")
            if end.when != "deal" and not eliminates:
                raise ValueError(
                    f"{where}: {end.when!r} can only hold after eliminations, but no action "
                    "eliminates anyone"
                )
        return self
