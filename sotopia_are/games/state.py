"""`GameState`: where a game stands, and the moves each player may make now.

Pure: no kernel, no asyncio, no agents. The state knows the deal (each player's role),
who is alive, the cycle, phase and round, who is protected this cycle, how often each
player used each limited action, the standing offer and the deal made, and this phase's
choices (the moves made, for the resolution at the phase's end).

The legal moves of an actor (:meth:`GameState.options`) are the phase's actions it may
take now: an action with uses left; ``accept``/``reject`` only against a standing offer
made by someone else; a ``target`` action only with at least one eligible target, its
``targets`` being exactly those (living players, per :data:`GameAction.targets`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from sotopia_are.messages import GameMove
from sotopia_are.social import (
    EpisodeSpec,
    GameAction,
    GameRules,
    MoveOption,
    Phase,
    Role,
    RoleActors,
    TeamActors,
)
from sotopia_are.social.game_rules import Audience

from .dealing import deal_roles
from .spec import rules_of

__all__ = ["Choice", "Deal", "GameState", "Offer"]


@dataclass(frozen=True, slots=True)
class Offer:
    """The standing offer: ``by`` proposes ``amount``."""

    by: str
    amount: int


@dataclass(frozen=True, slots=True)
class Deal:
    """An accepted offer: ``offer`` accepted by ``accepted_by``."""

    offer: Offer
    accepted_by: str


@dataclass(frozen=True, slots=True)
class Choice:
    """A move made this phase: ``actor`` took ``action`` with ``move``, seen by
    ``audience`` (None: everyone)."""

    actor: str
    action: GameAction
    move: GameMove
    audience: tuple[str, ...] | None


class GameState:
    """The state of one game of ``spec`` (a spec with ``game`` set), before its first
    phase: everyone alive, roles dealt by the seed (:func:`deal_roles`)."""

    def __init__(self, spec: EpisodeSpec) -> None:
        self.rules: GameRules = rules_of(spec)
        self.seed = spec.seed
        self.seats: tuple[str, ...] = tuple(spec.agent_names)
        self.roles: dict[str, Role] = {
            name: self.rules.role(role) for name, role in deal_roles(spec).items()
        }
        self._alive = set(self.seats)
        self.cycle = 0
        self.phase_index = 0
        self.round = 0
        self.protected: set[str] = set()
        self.used: Counter[tuple[str, str]] = Counter()
        self.offer: Offer | None = None
        self.deal: Deal | None = None
        self.choices: list[Choice] = []

    # -- who is who

    @property
    def phase(self) -> Phase:
        """The phase being played."""
        return self.rules.phases[self.phase_index]

    def team_of(self, name: str) -> str:
        """``name``'s team."""
        return self.roles[name].team

    def is_alive(self, name: str) -> bool:
        """Whether ``name`` is still in the game."""
        return name in self._alive

    def living(self) -> tuple[str, ...]:
        """The living players, in seat order."""
        return tuple(name for name in self.seats if name in self._alive)

    def living_team(self, team: str) -> tuple[str, ...]:
        """The living members of ``team``, in seat order."""
        return tuple(name for name in self.living() if self.team_of(name) == team)

    def eliminate(self, name: str) -> None:
        """``name`` is out of the game."""
        self._alive.discard(name)

    def actors(self) -> tuple[str, ...]:
        """Who acts in the current phase: its living actors, in seat order."""
        actors = self.phase.actors
        if isinstance(actors, RoleActors):
            return tuple(name for name in self.living() if self.roles[name].name == actors.role)
        if isinstance(actors, TeamActors):
            return self.living_team(actors.team)
        return self.living()

    # -- moving through the game

    def begin_phase(self, cycle: int, phase_index: int) -> None:
        """Start phase ``phase_index`` of cycle ``cycle``: no choices yet; a new cycle
        clears the protections."""
        if cycle != self.cycle:
            self.protected.clear()
        self.cycle, self.phase_index, self.round = cycle, phase_index, 0
        self.choices.clear()

    # -- legal moves

    def uses_left(self, actor: str, action: GameAction) -> int | None:
        """How often ``actor`` may still take ``action`` in this game (None: always)."""
        if action.uses_per_game is None:
            return None
        return action.uses_per_game - self.used[(actor, action.name)]

    def targets(self, actor: str, action: GameAction) -> tuple[str, ...]:
        """Whom ``actor`` may aim ``action`` at now, in seat order."""
        living = self.living()
        if action.targets == "living":
            return living
        if action.targets == "living_others":
            return tuple(name for name in living if name != actor)
        team = self.team_of(actor)
        if action.targets == "outside_team":
            return tuple(name for name in living if self.team_of(name) != team)
        return tuple(name for name in living if name != actor and self.team_of(name) == team)

    def options(self, actor: str) -> tuple[MoveOption, ...]:
        """The moves ``actor`` may make now in the current phase, in the phase's order."""
        options: list[MoveOption] = []
        for action in self.phase.actions:
            if self.uses_left(actor, action) == 0:
                continue
            if action.kind in ("accept", "reject") and (
                self.offer is None or self.offer.by == actor
            ):
                continue
            targets: tuple[str, ...] = ()
            if action.kind == "target":
                targets = self.targets(actor, action)
                if not targets:
                    continue
            offer = action.kind == "offer"
            options.append(
                MoveOption(
                    name=action.name,
                    kind=action.kind,
                    description=action.description,
                    audience=action.audience,
                    targets=targets,
                    amount_min=action.amount_min if offer else 0,
                    amount_max=action.amount_max if offer else 0,
                )
            )
        return tuple(options)

    def audience(self, actor: str, audience: Audience) -> tuple[str, ...] | None:
        """Who sees a move of ``actor`` made for ``audience``: everyone (None), the
        living members of its team (itself included), or itself alone."""
        if audience == "everyone":
            return None
        if audience == "team":
            return self.living_team(self.team_of(actor))
        return (actor,)

    # -- moves

    def record(self, actor: str, move: GameMove) -> None:
        """``actor`` made ``move``, a legal move of the current phase: it counts towards
        the action's uses and this phase's choices, and an offer stands, an accept makes
        the deal, a reject clears the offer."""
        action = next(action for action in self.phase.actions if action.name == move.move)
        self.used[(actor, action.name)] += 1
        self.choices.append(Choice(actor, action, move, self.audience(actor, action.audience)))
        if action.kind == "offer" and move.amount is not None:
            self.offer = Offer(actor, move.amount)
        elif action.kind == "accept" and self.offer is not None:
            self.deal = Deal(self.offer, actor)
            self.offer = None
        elif action.kind == "reject":
            self.offer = None
