"""What the viewer shows of a stored game: its phases, the votes and tallies of each,
who was eliminated, and — once the game is over — the roles and the outcome.

All of it is read from the record's log: the phases from the announcements the game makes
as each starts (``Cycle N, PHASE.`` or ``Cycle N, PHASE: ...``, to everyone), the votes
from the moves, the eliminations from the ``eliminate`` events, the announced results from
the tallies the game tells, and the outcome recomputed by :func:`outcome_of` from the log.
Roles are not read from the private notices: they are shown only with the outcome of a
finished game, as the game reveals them to everyone at its end.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sotopia_are.games import GameOutcome, outcome_of
from sotopia_are.record import EpisodeRecord
from sotopia_are.simulation.data_handler.values import decode_value
from sotopia_are.social import ENVIRONMENT_SENDER, ConversationEntry, EpisodeStatus, GameRules

__all__ = ["GameView", "PhaseSection", "Tally", "Vote", "game_view", "phase_sections"]

_OPENING = re.compile(r"Cycle (\d+), ")


@dataclass(frozen=True)
class Vote:
    """One ``target`` move: ``voter`` chose ``target`` with the action ``action``, giving
    ``reason`` (maybe empty); ``audience`` as the log has it (None: everyone saw it)."""

    voter: str
    action: str
    target: str
    reason: str
    audience: tuple[str, ...] | None


@dataclass(frozen=True)
class Tally:
    """A plurality action's count in one phase: each voter's last choice counted, as the
    game counts them (``counts``, most votes first) and the result the game announced
    (``announced``; empty if the log holds none, e.g. a game cut short)."""

    action: str
    counts: tuple[tuple[str, int], ...]
    announced: str


@dataclass(frozen=True)
class PhaseSection:
    """The entries of one phase as they happened, from its announcement to the next
    phase's (``cycle`` 0 and ``name`` ``"start"`` for what came before the first phase:
    the roles being dealt), with its votes, tallies and the players it eliminated."""

    cycle: int
    name: str
    entries: tuple[ConversationEntry, ...]
    votes: tuple[Vote, ...] = ()
    tallies: tuple[Tally, ...] = ()
    eliminated: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        """How the page heads it, e.g. ``cycle 1 · day-vote``."""
        return "the start: roles dealt" if self.cycle == 0 else f"cycle {self.cycle} · {self.name}"


@dataclass(frozen=True)
class GameView:
    """A stored game as the viewer shows it: its ``sections`` (every entry, omniscient) and
    its ``outcome`` (with the roles) when it finished; else ``outcome`` is None and
    ``no_outcome`` says why."""

    rules: GameRules
    sections: tuple[PhaseSection, ...]
    outcome: GameOutcome | None
    no_outcome: str


def game_view(record: EpisodeRecord) -> GameView | None:
    """What the viewer shows of ``record``'s game; None if it is a conversation."""
    rules = record.spec.game
    if rules is None:
        return None
    entries = record.entries
    eliminations = _eliminations(record)
    sections = tuple(
        _with_results(section, rules, eliminations) for section in phase_sections(rules, entries)
    )
    outcome, no_outcome = None, ""
    if record.status is not EpisodeStatus.COMPLETE:
        no_outcome = f"the game is {record.status.value}: {record.reason or 'no reason given'}"
    else:
        try:
            outcome = outcome_of(record.spec, entries)
        except ValueError as error:
            no_outcome = f"the outcome cannot be recomputed from the log: {error}"
    return GameView(rules, sections, outcome, no_outcome)


def phase_sections(
    rules: GameRules, entries: Iterable[ConversationEntry]
) -> tuple[PhaseSection, ...]:
    """``entries`` (all of a game's, or those one player saw) cut at each phase's
    announcement; a section's votes, tallies and eliminations are left empty."""
    names = {phase.name for phase in rules.phases}
    sections: list[PhaseSection] = []
    cycle, name = 0, "start"
    current: list[ConversationEntry] = []
    for entry in entries:
        opening = _opening(entry, names)
        if opening is not None:
            sections.append(PhaseSection(cycle, name, tuple(current)))
            (cycle, name), current = opening, []
        current.append(entry)
    sections.append(PhaseSection(cycle, name, tuple(current)))
    return tuple(section for section in sections if section.entries)


def _opening(entry: ConversationEntry, names: set[str]) -> tuple[int, str] | None:
    """The cycle and phase ``entry`` announces the start of, if it is such an announcement
    (made by the game, to everyone, naming one of the game's phases)."""
    if entry.sender != ENVIRONMENT_SENDER or entry.to is not None or entry.action is not None:
        return None
    found = _OPENING.match(entry.content)
    if found is None:
        return None
    rest = entry.content[found.end() :]
    for name in names:
        if rest == f"{name}." or rest.startswith(f"{name}: "):
            return int(found.group(1)), name
    return None


def _eliminations(record: EpisodeRecord) -> dict[str, str]:
    """The player each ``eliminate`` event of the log put out, by event id."""
    eliminated = {}
    for event in record.events:
        action = event.action
        if action is None or action.function != "eliminate":
            continue
        for arg in action.args or ():
            if arg.name == "participant":
                eliminated[event.event_id] = str(decode_value(arg.value, arg.value_type))
    return eliminated


def _with_results(
    section: PhaseSection, rules: GameRules, eliminations: dict[str, str]
) -> PhaseSection:
    """``section`` with its votes, tallies and eliminations filled in."""
    phase = next((p for p in rules.phases if p.name == section.name), None)
    targeted = {} if phase is None else {a.name: a for a in phase.actions if a.kind == "target"}
    votes = tuple(
        Vote(entry.sender, entry.move.move, entry.move.target, entry.move.argument, entry.to)
        for entry in section.entries
        if entry.move is not None and entry.move.move in targeted and entry.move.target is not None
    )
    tallies = tuple(
        _tally(name, section, votes)
        for name, action in targeted.items()
        if action.resolution == "plurality" and any(vote.action == name for vote in votes)
    )
    eliminated = tuple(
        eliminations[entry.event_id] for entry in section.entries if entry.event_id in eliminations
    )
    return PhaseSection(section.cycle, section.name, section.entries, votes, tallies, eliminated)


def _tally(action: str, section: PhaseSection, votes: Sequence[Vote]) -> Tally:
    last = {vote.voter: vote.target for vote in votes if vote.action == action}
    counts = Counter(last.values()).most_common()
    prefix = f"{action} in {section.name}: "
    announced = next(
        (
            entry.content
            for entry in section.entries
            if entry.sender == ENVIRONMENT_SENDER and entry.content.startswith(prefix)
        ),
        "",
    )
    return Tally(action, tuple(counts), announced)
