"""Resolving a phase at its end: counting its choices and applying their effects.

Each ``target`` action the phase's players chose is resolved once the phase is over, in
the order protect, eliminate, reveal, count-only (so a protection made in the same phase
holds against its eliminations), actions of one effect in the phase's order:

- ``plurality``: each player's last choice of the action in the phase counts; the most
  chosen target is resolved. A tie resolves nobody (``no_one``) or one of the tied,
  drawn with ``derive_seed(spec.seed, f"tie:{cycle}:{phase}:{action}")`` (``random``).
  The tally is told to whoever saw the counted choices.
- ``each``: every choice is resolved, in the order made.

Effects: ``protect`` (the target survives eliminations until the cycle ends),
``eliminate`` (unless protected; a player already out stays out), ``reveal_role`` /
``reveal_team`` (told to the choosers alone). A phase whose vote could eliminate (a
plurality ``eliminate`` action) and did not says so to everyone ("Nobody was eliminated
in day-vote."); an optional ability left unused, or failing, is not announced.
"""

from __future__ import annotations

import random
from collections import Counter

from sotopia_are.simulation.apps.app import derive_seed
from sotopia_are.social import GameAction

from .notice import Notice
from .state import Choice, GameState

__all__ = ["resolve_phase"]

_EFFECT_ORDER = {"protect": 0, "eliminate": 1, "reveal_role": 2, "reveal_team": 2, "none": 3}


def resolve_phase(state: GameState) -> list[Notice]:
    """Resolve the current phase's choices on ``state``; what the players are told, in
    order (tallies, eliminations, revelations)."""
    phase = state.phase
    notices: list[Notice] = []
    could_eliminate = eliminated = False
    actions = sorted(
        (action for action in phase.actions if action.kind == "target"),
        key=lambda action: _EFFECT_ORDER[action.effect],
    )
    for action in actions:
        could_eliminate |= action.effect == "eliminate" and action.resolution == "plurality"
        choices = [choice for choice in state.choices if choice.action.name == action.name]
        if not choices:
            continue
        if action.resolution == "plurality":
            resolved = _plurality(state, action, choices, notices)
        else:
            resolved = [((choice.actor,), choice.move.target) for choice in choices]
        for choosers, target in resolved:
            if target is not None:
                eliminated |= _apply(state, action, choosers, target, notices)
    if could_eliminate and not eliminated:
        notices.append(Notice(f"Nobody was eliminated in {phase.name}."))
    return notices


def _plurality(
    state: GameState, action: GameAction, choices: list[Choice], notices: list[Notice]
) -> list[tuple[tuple[str, ...], str | None]]:
    """The one resolution of a plurality action (its choosers and the chosen target, None
    for a tie resolving nobody); its tally is added to ``notices``."""
    last = {choice.actor: choice for choice in choices}
    counts = Counter(choice.move.target for choice in last.values())
    top = max(counts.values())
    tied = [name for name in state.seats if counts[name] == top]
    chosen: str | None
    if len(tied) == 1:
        chosen = tied[0]
        verdict = f"{chosen} is chosen."
    elif action.tie == "no_one":
        chosen = None
        verdict = f"a tie between {', '.join(tied)}: nobody is chosen."
    else:
        draw = random.Random(
            derive_seed(state.seed, f"tie:{state.cycle}:{state.phase.name}:{action.name}")
        )
        chosen = draw.choice(tied)
        verdict = f"a tie between {', '.join(tied)}, drawn: {chosen} is chosen."
    ranked = sorted((name for name in state.seats if counts[name]), key=lambda name: -counts[name])
    tally = ", ".join(f"{name} {counts[name]}" for name in ranked)
    notices.append(
        Notice(
            f"{action.name} in {state.phase.name}: {tally}; {verdict}",
            _union(state, [choice.audience for choice in last.values()]),
        )
    )
    return [(tuple(last), chosen)]


def _union(state: GameState, audiences: list[tuple[str, ...] | None]) -> tuple[str, ...] | None:
    """Everyone who saw at least one of the choices (None: everyone saw one)."""
    if any(audience is None for audience in audiences):
        return None
    seen = {name for audience in audiences for name in audience or ()}
    return tuple(name for name in state.seats if name in seen)


def _apply(
    state: GameState,
    action: GameAction,
    choosers: tuple[str, ...],
    target: str,
    notices: list[Notice],
) -> bool:
    """Apply ``action``'s effect on ``target``; whether it eliminated them."""
    if action.effect == "protect":
        state.protected.add(target)
    elif action.effect == "eliminate":
        if not state.is_alive(target) or target in state.protected:
            return False
        state.eliminate(target)
        notices.append(Notice(f"{target} was eliminated in {state.phase.name}.", eliminated=target))
        return True
    elif action.effect == "reveal_role":
        notices.append(Notice(f"{target} is a {state.roles[target].name}.", choosers))
    elif action.effect == "reveal_team":
        notices.append(Notice(f"{target} is on the {state.team_of(target)} team.", choosers))
    return False
