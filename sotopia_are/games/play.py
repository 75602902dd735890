"""`GamePlay`: the course of a game as a generator — who is asked what, in which order.

The play is pure and deterministic: it yields an :class:`Ask` (players to ask at once,
each with the moves it may make) and is sent back their moves, in the ask's order; what
the players are to be told meanwhile (:class:`Notice` s) it queues for
:meth:`GamePlay.take_notices`; it returns the :class:`GameOutcome`. The runner answers
the asks with agents, :func:`~sotopia_are.games.outcome_of` with the moves of a finished
game's log — so both fold the one state the same way.

The course: the roles are told (each player privately its role, description, goal and,
with ``knows_team``, its teammates). Then cycle after cycle, each phase in order: a phase
whose actors are all out is skipped; else it is announced to everyone and played for its
``rounds``, then resolved (:func:`resolve_phase`). Per round, by the phase's ``order``:
``round-robin`` asks each actor in seat order, one at a time; ``simultaneous`` asks every
actor at once (their moves take effect in seat order); ``bids`` asks every actor at once
for a bid (a move ``bid`` with an amount from 0 to 10, seen by nobody else), then asks the
highest bidder (ties drawn with ``derive_seed(spec.seed, f"bid:{cycle}:{phase}:{round}")``)
for its move. An actor with no legal move is not asked. The end conditions are checked
after every move and every phase's resolution; after ``max_cycles`` cycles the game ends
without winners. At the end every role is revealed to everyone.
"""

from __future__ import annotations

import random
from collections.abc import Generator, Sequence
from dataclasses import dataclass

from sotopia_are.messages import GameMove
from sotopia_are.simulation.apps.app import derive_seed
from sotopia_are.social import EpisodeSpec, MoveOption

from .ends import Ending, cycle_limit, ending_of
from .legality import check_move, option_named
from .notice import Notice
from .outcome import GameOutcome, outcome_from
from .resolution import resolve_phase
from .state import GameState

__all__ = ["BID", "Ask", "GamePlay", "Steps"]

BID = MoveOption(
    name="bid",
    kind="offer",
    description="how much you want to be the one who acts next, from 0 to 10",
    audience="moderator",
    amount_min=0,
    amount_max=10,
)
"""The one move of a bidding ask."""


@dataclass(frozen=True, slots=True)
class Ask:
    """Players to ask at once in ``phase``: ``options`` pairs each (in seat order) with
    the moves it may make."""

    phase: str
    options: tuple[tuple[str, tuple[MoveOption, ...]], ...]

    @property
    def actors(self) -> tuple[str, ...]:
        """The players asked, in seat order."""
        return tuple(name for name, _ in self.options)

    def options_of(self, actor: str) -> tuple[MoveOption, ...]:
        """The moves ``actor`` may make; KeyError if it is not asked."""
        for name, options in self.options:
            if name == actor:
                return options
        raise KeyError(actor)


Steps = Generator[Ask, Sequence[GameMove], GameOutcome]
"""The play: yields asks, is sent their moves, returns the outcome."""

_Rounds = Generator[Ask, Sequence[GameMove], Ending | None]


class GamePlay:
    """One game of ``spec`` (a spec with ``game`` set) from the deal to its outcome."""

    def __init__(self, spec: EpisodeSpec) -> None:
        self.state = GameState(spec)
        self._notices: list[Notice] = []

    def take_notices(self) -> list[Notice]:
        """What the players are to be told since the last call, in order."""
        notices, self._notices = self._notices, []
        return notices

    def audience(self, ask: Ask, actor: str, move: GameMove) -> tuple[str, ...] | None:
        """Who sees ``actor``'s legal answer ``move`` to ``ask`` (None: everyone)."""
        option = option_named(ask.options_of(actor), move.move)
        if option is None:
            raise ValueError(f"{actor}'s move {move.move!r} is not one of its options")
        return self.state.audience(actor, option.audience)

    def steps(self) -> Steps:
        """The play (call once). Sent moves that are not legal answers to the ask:
        ValueError naming the player and why."""
        state = self.state
        self._tell_roles()
        ending = ending_of(state)
        cycle = 0
        while ending is None:
            if cycle == state.rules.max_cycles:
                ending = cycle_limit(state)
                break
            cycle += 1
            for index, phase in enumerate(state.rules.phases):
                state.begin_phase(cycle, index)
                if not state.actors():
                    continue
                opening = f"Cycle {cycle}, {phase.name}"
                self._tell(f"{opening}: {phase.announce}" if phase.announce else f"{opening}.")
                ending = yield from self._rounds()
                if ending is not None:
                    break
                self._notices.extend(resolve_phase(state))
                ending = ending_of(state)
                if ending is not None:
                    break
        outcome = outcome_from(state, ending)
        roles = ", ".join(f"{row.name} {row.role} ({row.team})" for row in outcome.players)
        self._tell(f"{ending.reason[0].upper()}{ending.reason[1:]}. Roles: {roles}.")
        return outcome

    def _rounds(self) -> _Rounds:
        """Play the current phase's rounds; the ending as soon as one holds, else None."""
        state = self.state
        order = state.phase.order
        for number in range(1, state.phase.rounds + 1):
            state.round = number
            if order == "round-robin":
                for name in state.actors():
                    # Asked now: earlier moves of the round change what it may do.
                    options = state.options(name)
                    if options and (ending := (yield from self._ask(((name, options),)))):
                        return ending
                continue
            ready = [(name, state.options(name)) for name in state.actors()]
            ready = [(name, options) for name, options in ready if options]
            if order == "simultaneous":
                if ready and (ending := (yield from self._ask(tuple(ready)))):
                    return ending
            elif ready:
                winner = yield from self._bid_winner(tuple(name for name, _ in ready))
                if ending := (yield from self._ask(((winner, state.options(winner)),))):
                    return ending
        return None

    def _ask(self, options: tuple[tuple[str, tuple[MoveOption, ...]], ...]) -> _Rounds:
        """Ask, then record the moves in seat order; the ending as soon as one holds."""
        ask = Ask(self.state.phase.name, options)
        moves = self._checked(ask, (yield ask))
        for name, move in zip(ask.actors, moves, strict=True):
            self.state.record(name, move)
            if ending := ending_of(self.state):
                return ending
        return None

    def _bid_winner(self, bidders: tuple[str, ...]) -> Generator[Ask, Sequence[GameMove], str]:
        """Ask ``bidders`` for bids; the highest bidder (ties drawn by the seed)."""
        state = self.state
        ask = Ask(state.phase.name, tuple((name, (BID,)) for name in bidders))
        amounts = [move.amount or 0 for move in self._checked(ask, (yield ask))]
        top = max(amounts)
        tied = [name for name, amount in zip(bidders, amounts, strict=True) if amount == top]
        draw = random.Random(
            derive_seed(state.seed, f"bid:{state.cycle}:{state.phase.name}:{state.round}")
        )
        return draw.choice(tied)

    def _checked(self, ask: Ask, moves: Sequence[GameMove]) -> Sequence[GameMove]:
        """``moves``, the answers to ``ask``; ValueError unless each is legal."""
        if len(moves) != len(ask.options):
            raise ValueError(f"{len(ask.options)} moves were asked for, {len(moves)} given")
        for (name, options), move in zip(ask.options, moves, strict=True):
            if reason := check_move(move, options):
                raise ValueError(f"{name}'s move is not legal: {reason}")
        return moves

    def _tell_roles(self) -> None:
        state = self.state
        counts = ", ".join(f"{role.count} {role.name}" for role in state.rules.roles)
        self._tell(f"The game begins with {len(state.seats)} players. Roles: {counts}.")
        for name in state.seats:
            role = state.roles[name]
            words = [f"{name}, your role is {role.name} (team {role.team}).", role.description]
            if role.goal:
                words.append(f"Goal: {role.goal}")
            mates = [other for other in state.living_team(role.team) if other != name]
            if role.knows_team and mates:
                words.append(f"Your teammates: {', '.join(mates)}.")
            self._tell(" ".join(word for word in words if word), (name,))

    def _tell(self, content: str, perceivers: tuple[str, ...] | None = None) -> None:
        self._notices.append(Notice(content, perceivers))
