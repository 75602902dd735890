"""Imported records checked as played ones are built: what a run cannot produce, an
import may not bring in.

A played record is consistent by construction — the runner only lets participants act,
counts the turns it plays, and the judge's scores are validated against the rubric's
ranges. A record read from a file (JSONL, ARE JSON) is only as good as the file:
:func:`record_problems` finds what no run could have written, each as ``field: problem``
naming the field; :func:`checked_import` refuses such a record, or keeps it flagged
(:attr:`EpisodeRecord.problems`) when asked to be lenient.
"""

from __future__ import annotations

import functools
import math
import statistics

from sotopia_are import SotopiaAreError
from sotopia_are.evaluation import DimensionScore, Rubric, builtin_rubrics
from sotopia_are.social import EpisodeStatus

from .episode_record import EpisodeRecord
from .scores import OVERALL
from .verdict import Verdict

__all__ = ["RecordCheckError", "checked_import", "record_problems"]


class RecordCheckError(SotopiaAreError, ValueError):
    """An imported record that no run could have produced; the message names each field
    and its problem."""

    def __init__(self, episode_id: str, problems: list[str]) -> None:
        super().__init__(
            f"episode {episode_id}: " + "; ".join(problems) + " (refused; import with "
            "--lenient, lenient=True, to keep it flagged)"
        )
        self.episode_id = episode_id
        self.problems = problems


def checked_import(record: EpisodeRecord, *, lenient: bool = False) -> EpisodeRecord:
    """``record`` if :func:`record_problems` finds nothing; else
    :class:`RecordCheckError`, or with ``lenient`` the record flagged with its problems
    (added to those it already had)."""
    problems = record_problems(record)
    if not problems:
        return record
    if not lenient:
        raise RecordCheckError(record.episode_id, problems)
    flagged = tuple(dict.fromkeys([*record.problems, *problems]))
    return record.model_copy(update={"problems": flagged})


def record_problems(record: EpisodeRecord) -> list[str]:
    """What in ``record`` no run could have written, each ``field: problem``: names that
    are not participants (acting, receiving, holding a model, failing, rated), a status
    that disagrees with the events or ``turns_played``, a verdict on an episode that did
    not complete, scores outside their dimension's range (or a range that is not the
    built-in rubric's), statistics that are not those of the scores."""
    problems = _participant_problems(record)
    problems += _turn_problems(record)
    for number, verdict in enumerate(record.verdicts):
        problems += _verdict_problems(record, verdict, f"verdicts[{number}]")
    return problems


def _names(names: list[str]) -> str:
    return ", ".join(names)


def _participant_problems(record: EpisodeRecord) -> list[str]:
    names = list(record.spec.agent_names)
    known = set(names)
    problems = [
        f"{field}: {name!r} is not a participant ({_names(names)})"
        for field, keys in (("models", record.models), ("agent_sampling", record.agent_sampling))
        for name in keys
        if name not in known
    ]
    if record.failed_agent is not None and record.failed_agent not in known:
        problems.append(
            f"failed_agent: {record.failed_agent!r} is not a participant ({_names(names)})"
        )
    index = {event.event_id: number for number, event in enumerate(record.events)}
    for entry in record.entries:
        if entry.action is None:
            continue  # messages from outside the agents may come from anyone
        field = f"events[{index.get(entry.event_id, '?')}]"
        if entry.sender not in known:
            problems.append(
                f"{field}: an action by {entry.sender!r}, who is not a participant "
                f"({_names(names)})"
            )
        strangers = [name for name in entry.to or () if name not in known]
        if strangers:
            problems.append(
                f"{field}: {entry.sender!r} addressed {_names(strangers)}, not participants "
                f"({_names(names)})"
            )
    return problems


def _turn_problems(record: EpisodeRecord) -> list[str]:
    """The runner plays turns 0, 1, … and every agent acts (if only doing nothing) in
    every turn it plays: a complete episode's actions fill turns 0..turns_played-1; a
    failed one's stop at the turn it failed in."""
    turns = sorted({e.turn for e in record.entries if e.action is not None})
    played = record.turns_played
    if played < 0:
        return [f"turns_played: {played} is negative"]
    if record.status is EpisodeStatus.COMPLETE:
        if not record.events:
            return ["status: complete, but the episode has no events"]
        if not turns:
            return ["status: complete, but no participant ever acted in its events"]
        if turns != list(range(played)):
            return [
                f"turns_played: {played}, but the events hold actions in turns {_turn_text(turns)}"
            ]
    elif record.status is EpisodeStatus.FAILED and turns and turns[-1] > played:
        return [
            f"turns_played: {played}, but the events hold actions up to turn {turns[-1]} "
            "(a failed episode stops in the turn it failed)"
        ]
    return []


def _turn_text(turns: list[int]) -> str:
    if turns == list(range(turns[0], turns[-1] + 1)):
        return f"{turns[0]}..{turns[-1]}"
    return ", ".join(map(str, turns))


def _verdict_problems(record: EpisodeRecord, verdict: Verdict, field: str) -> list[str]:
    if record.status is not EpisodeStatus.COMPLETE:
        return [
            f"{field}: a verdict on a {record.status.value} episode (only complete ones are rated)"
        ]
    names = list(record.spec.agent_names)
    reference = _builtin(verdict.rubric)
    problems = []
    for number, rating in enumerate(verdict.evaluation.ratings):
        where = f"{field}.evaluation.ratings[{number}]"
        if rating.agent not in names:
            problems.append(
                f"{where}.agent: {rating.agent!r} is not a participant ({_names(names)})"
            )
        for name, dimension in rating.dimensions.items():
            problems += _dimension_problems(
                dimension, f"{where}.dimensions.{name}", name, reference
            )
        means = [d.mean for d in rating.dimensions.values()]
        if means and not math.isclose(rating.overall, statistics.fmean(means), abs_tol=1e-9):
            problems.append(
                f"{where}.overall: {rating.overall} is not the mean of its dimensions "
                f"({statistics.fmean(means):g}) ({OVERALL})"
            )
    return problems


@functools.cache
def _builtin(name: str) -> Rubric | None:
    return Rubric.load(name) if name in builtin_rubrics() else None


def _dimension_problems(
    dimension: DimensionScore, where: str, name: str, reference: Rubric | None
) -> list[str]:
    problems = []
    if dimension.name != name:
        problems.append(f"{where}.name: {dimension.name!r} under the key {name!r}")
    if reference is not None:
        defined = {d.name: (d.low, d.high) for d in reference.dimensions}
        if name not in defined:
            problems.append(f"{where}: rubric {reference.name} has no dimension {name!r}")
        elif (dimension.low, dimension.high) != defined[name]:
            low, high = defined[name]
            problems.append(
                f"{where}: range {dimension.low}..{dimension.high}, but rubric "
                f"{reference.name} rates {name} {low}..{high}"
            )
    if dimension.low >= dimension.high:
        problems.append(f"{where}: range {dimension.low}..{dimension.high} is empty")
    for number, score in enumerate(dimension.scores):
        if not dimension.low <= score <= dimension.high:
            problems.append(
                f"{where}.scores[{number}]: {score} is outside {name}'s range "
                f"{dimension.low}..{dimension.high}"
            )
    expected = DimensionScore.of(
        name, dimension.low, dimension.high, dimension.scores, dimension.reasonings
    )
    for stat in ("mean", "std", "min", "max"):
        given, computed = getattr(dimension, stat), getattr(expected, stat)
        if not math.isclose(given, computed, abs_tol=1e-9):
            problems.append(
                f"{where}.{stat}: {given} is not the {stat} of its scores ({computed:g})"
            )
    if len(dimension.reasonings) != len(dimension.scores):
        problems.append(
            f"{where}.reasonings: {len(dimension.reasonings)} for {len(dimension.scores)} scores"
        )
    return problems
