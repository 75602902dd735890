"""Training data from rated episodes: SFT examples and DPO preference pairs as JSONL.

An example is one model call an agent made in a stored episode: the exact messages it
was sent (:attr:`LLMCall.messages`, the first request, rendered from what that agent
perceived through the visibility function) and, as the target, the action it took (the
call's validated answer as JSON). Nothing else goes in, so an example holds no private
content its agent did not see. A preference pair joins two examples with the *same*
prompt (the same scenario, role and conversation so far) whose episodes the judge rated
differently: the higher-rated action is ``chosen`` (the ``prompt``/``chosen``/``rejected``
format TRL's DPO trainer reads). Every file gets a manifest beside it
(``<name>.manifest.json``): source, judges, filters and counts; every row names the
judge its scores came from (``judge``: ``model | rubric | prompt``).

A file that would hold nothing is an
:class:`~sotopia_are.storage.EmptySelectionError` saying why (nothing written) unless
``allow_empty``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, JsonValue

from sotopia_are import SotopiaAreError
from sotopia_are.llm import LLMCall
from sotopia_are.record import EpisodeRecord
from sotopia_are.simulation.files import write_text_atomically
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import EmptySelectionError, EpisodeStore

from .kinds import DEFAULT_PREFERENCE_DIMENSION, TrainingKind

__all__ = [
    "DEFAULT_PREFERENCE_DIMENSION",
    "TrainingDataError",
    "TrainingExample",
    "TrainingFilters",
    "TrainingKind",
    "TrainingManifest",
    "export_preferences",
    "export_sft",
    "export_training_data",
    "manifest_path",
    "training_examples",
]


class TrainingDataError(SotopiaAreError, ValueError):
    """Rated episodes that cannot make the training file asked for (a preference
    dimension their verdicts do not score); nothing was written."""


class TrainingFilters(BaseModel):
    """Which examples to take: episodes with ``tag``, agents named ``agent`` played by
    ``model``, scored by the judge ``judge`` (a model or verdict key; default the latest
    rated verdict, :meth:`EpisodeRecord.verdict_of`) at least ``min_scores``
    (``{"goal": 7}``: SOTOPIA-π's filter). Only complete episodes count; with
    ``min_scores``, only rated ones."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tag: str | None = None
    model: str | None = None
    agent: str | None = None
    judge: str | None = None
    min_scores: dict[str, float] = {}


class TrainingManifest(BaseModel):
    """What a training file holds and where it came from; written beside it."""

    model_config = ConfigDict(extra="forbid")

    kind: TrainingKind
    data_file: str
    store: str
    source_tag: str | None
    judges: list[str]
    filters: TrainingFilters
    dimension: str | None = None
    min_gap: float | None = None
    episodes_read: int
    episodes_used: int
    examples: int
    skipped: dict[str, int]
    created_at: float


@dataclass(frozen=True)
class TrainingExample:
    """One agent's model call in one episode: the ``prompt`` it was sent, its action as
    the ``target`` (JSON), and the judge's ``scores`` of that agent (empty if unrated)
    with the ``judge`` (verdict key: ``model | rubric | prompt``) they came from."""

    episode_id: str
    scenario_id: str
    agent: str
    model: str
    call_index: int
    prompt: list[dict[str, str]]
    target: str
    scores: dict[str, float] = field(default_factory=dict)
    judge: str | None = None


def manifest_path(data_file: str | Path) -> Path:
    """Where the manifest of ``data_file`` goes: ``sft.jsonl`` → ``sft.manifest.json``."""
    path = Path(data_file)
    return path.with_name(f"{path.stem}.manifest.json")


def training_examples(
    store: EpisodeStore, filters: TrainingFilters, skipped: Counter[str] | None = None
) -> Iterator[TrainingExample]:
    """Every example the filters let through, episode by episode (oldest first), each
    episode's in participant and call order; ``skipped`` counts what was left out, by
    reason. Episodes imported flagged (:attr:`EpisodeRecord.problems`) are left out."""
    skipped = Counter() if skipped is None else skipped
    ids = store.episode_ids(tag=filters.tag, model=filters.model, agent=filters.agent)
    for episode_id in ids:
        skipped["episodes_read"] += 1
        record = store.load(episode_id)
        if record.status is not EpisodeStatus.COMPLETE:
            skipped["episode_not_complete"] += 1
            continue
        if record.problems:
            # Imported leniently despite what the checks found: not training material.
            skipped["episode_flagged"] += 1
            continue
        verdict = record.verdict_of(filters.judge)
        if verdict is None and (filters.min_scores or filters.judge):
            skipped["episode_unrated"] += 1
            continue
        used = False
        for agent in record.spec.agent_names:
            if filters.agent is not None and agent != filters.agent:
                continue
            model = record.models.get(agent, "")
            if filters.model is not None and model != filters.model:
                continue
            scores = verdict.scores.get(agent, {}) if verdict is not None else {}
            if not _passes(scores, filters.min_scores):
                skipped["agent_below_min_scores"] += 1
                continue
            for index, call in enumerate(_calls_of(record, agent)):
                if not call.ok:
                    skipped["failed_call"] += 1
                    continue
                used = True
                yield TrainingExample(
                    episode_id=record.episode_id,
                    scenario_id=record.scenario_id,
                    agent=agent,
                    model=model,
                    call_index=index,
                    prompt=[message.model_dump() for message in call.messages],
                    target=json.dumps(call.parsed, ensure_ascii=False),
                    scores=scores,
                    judge=verdict.key if verdict is not None else None,
                )
        skipped["episodes_used"] += used


def export_sft(
    store: EpisodeStore,
    out: str | Path,
    *,
    tag: str | None = None,
    model: str | None = None,
    agent: str | None = None,
    judge: str | None = None,
    min_scores: Mapping[str, float] | None = None,
    allow_empty: bool = False,
) -> TrainingManifest:
    """Write the chat-format SFT examples the filters let through (see
    :class:`TrainingFilters`) to ``out`` as JSONL — ``{"messages": [..., {"role":
    "assistant", "content": <action JSON>}], "episode_id", "agent", "model", "scores",
    "judge", ...}`` — and its manifest beside it; the manifest. No example is an
    :class:`~sotopia_are.storage.EmptySelectionError` saying what left each out (nothing
    written) unless ``allow_empty``."""
    filters = _filters(tag, model, agent, judge, min_scores)
    counts: Counter[str] = Counter()
    rows = []
    judges: set[str] = set()
    for example in training_examples(store, filters, counts):
        judges.update([example.judge] if example.judge else [])
        rows.append(
            {
                "messages": [*example.prompt, {"role": "assistant", "content": example.target}],
                **_metadata(example),
            }
        )
    if not rows and not allow_empty:
        raise EmptySelectionError(f"no SFT examples: {_why_none(store, filters, counts)}")
    return _write(
        store,
        out,
        rows,
        kind=TrainingKind.sft,
        filters=filters,
        counts=counts,
        judges=judges,
        extra={},
    )


def export_preferences(
    store: EpisodeStore,
    out: str | Path,
    *,
    tag: str | None = None,
    model: str | None = None,
    agent: str | None = None,
    judge: str | None = None,
    min_scores: Mapping[str, float] | None = None,
    dimension: str = DEFAULT_PREFERENCE_DIMENSION,
    min_gap: float = 0.0,
    allow_empty: bool = False,
) -> TrainingManifest:
    """Write DPO pairs to ``out`` as JSONL — ``{"prompt": [...], "chosen": [{"role":
    "assistant", ...}], "rejected": [...], "chosen_score", "rejected_score", "judge",
    ...}`` — and its manifest beside it; the manifest.

    Examples with the same prompt (same role, scenario and conversation so far) from
    episodes rated by the same judge are paired when their actions differ and the
    agent's ``dimension`` scores differ by more than ``min_gap``: every higher-scored
    action against every lower-scored one. :class:`TrainingDataError` if a rated episode has no
    score on ``dimension``.
    No pair is an :class:`~sotopia_are.storage.EmptySelectionError` saying why (no
    shared prompts, identical scores, identical actions, gaps within ``min_gap``;
    nothing written) unless ``allow_empty``.
    """
    filters = _filters(tag, model, agent, judge, min_scores)
    counts: Counter[str] = Counter()
    groups: dict[str, list[TrainingExample]] = {}
    judges: set[str] = set()
    for example in training_examples(store, filters, counts):
        if example.judge is None:
            counts["example_unrated"] += 1
            continue
        if dimension not in example.scores:
            raise TrainingDataError(
                f"episode {example.episode_id} has no {dimension!r} score for "
                f"{example.agent}; its scores: {sorted(example.scores)}"
            )
        judges.add(example.judge)
        # Scores of different judges are not comparable: a pair has one judge.
        key = json.dumps([example.agent, example.prompt, example.judge], sort_keys=True)
        groups.setdefault(key, []).append(example)
    rows = [
        {
            "prompt": high.prompt,
            "chosen": [{"role": "assistant", "content": high.target}],
            "rejected": [{"role": "assistant", "content": low.target}],
            "chosen_score": high.scores[dimension],
            "rejected_score": low.scores[dimension],
            "chosen_episode": high.episode_id,
            "rejected_episode": low.episode_id,
            "agent": high.agent,
            "scenario_id": high.scenario_id,
            "judge": high.judge,
        }
        for group in groups.values()
        for high in group
        for low in group
        if high.scores[dimension] - low.scores[dimension] > min_gap and high.target != low.target
    ]
    if not rows and not allow_empty:
        why = _why_no_pairs(groups, dimension, min_gap) if groups else None
        raise EmptySelectionError(
            f"no preference pairs: {why or _why_none(store, filters, counts)}"
        )
    return _write(
        store,
        out,
        rows,
        kind=TrainingKind.preference,
        filters=filters,
        counts=counts,
        judges=judges,
        extra={"dimension": dimension, "min_gap": min_gap},
    )


def export_training_data(
    store: EpisodeStore,
    out: str | Path,
    kind: TrainingKind,
    *,
    tag: str | None = None,
    model: str | None = None,
    agent: str | None = None,
    judge: str | None = None,
    min_scores: Mapping[str, float] | None = None,
    dimension: str = DEFAULT_PREFERENCE_DIMENSION,
    min_gap: float = 0.0,
    allow_empty: bool = False,
) -> TrainingManifest:
    """:func:`export_sft` or :func:`export_preferences` (``dimension`` and ``min_gap`` are
    theirs), as ``kind`` says."""
    if kind is TrainingKind.sft:
        return export_sft(
            store,
            out,
            tag=tag,
            model=model,
            agent=agent,
            judge=judge,
            min_scores=min_scores,
            allow_empty=allow_empty,
        )
    return export_preferences(
        store,
        out,
        tag=tag,
        model=model,
        agent=agent,
        judge=judge,
        min_scores=min_scores,
        dimension=dimension,
        min_gap=min_gap,
        allow_empty=allow_empty,
    )


def _filters(
    tag: str | None,
    model: str | None,
    agent: str | None,
    judge: str | None,
    min_scores: Mapping[str, float] | None,
) -> TrainingFilters:
    return TrainingFilters(
        tag=tag, model=model, agent=agent, judge=judge, min_scores=dict(min_scores or {})
    )


def _selection(filters: TrainingFilters) -> str:
    """The filters that chose the episodes, as words (``tag 'x', model 'm'``)."""
    chosen = [
        f"{name} {value!r}"
        for name, value in (
            ("tag", filters.tag),
            ("model", filters.model),
            ("agent", filters.agent),
            ("judge", filters.judge),
        )
        if value is not None
    ]
    return f" ({', '.join(chosen)})" if chosen else ""


_LEFT_OUT = {
    "episode_not_complete": "did not complete",
    "episode_flagged": "were imported flagged (see 'sotopia-are show')",
    "episode_unrated": "had no rated verdict (of the judge asked for)",
    "agent_below_min_scores": "agents scored below the minimums",
    "failed_call": "model calls failed",
    "example_unrated": "examples came from unrated episodes",
}


def _why_none(store: EpisodeStore, filters: TrainingFilters, counts: Counter[str]) -> str:
    """Why the episodes the filters chose gave nothing, from what ``counts`` left out."""
    read = counts["episodes_read"]
    if not read:
        return f"no episodes{_selection(filters)} in {store.location}"
    reasons = [f"{counts[key]} {text}" for key, text in _LEFT_OUT.items() if counts[key]]
    if not reasons:
        reasons = ["none of their agents made a model call (scripted or human agents)"]
    return f"of {read} episodes{_selection(filters)}, " + "; ".join(reasons)


def _why_no_pairs(
    groups: Mapping[str, list[TrainingExample]], dimension: str, min_gap: float
) -> str:
    """Why examples grouped by prompt gave no pair: how their candidate pairs fell short."""
    examples = [example for group in groups.values() for example in group]
    episodes = len({example.episode_id for example in examples})
    values = {example.scores[dimension] for example in examples}
    if len(values) == 1:
        return (
            f"all {episodes} rated episodes gave every agent the same {dimension} score "
            f"({values.pop():g}), so no pair differs"
        )
    counts: Counter[str] = Counter()
    for group in groups.values():
        for number, first in enumerate(group):
            for second in group[number + 1 :]:
                gap = abs(first.scores[dimension] - second.scores[dimension])
                if first.target == second.target:
                    counts["the same action"] += 1
                elif gap == 0:
                    counts[f"the same {dimension} score"] += 1
                else:
                    counts[f"{dimension} scores within the minimum gap {min_gap:g}"] += 1
    if not counts:
        return (
            f"no two of the {len(examples)} examples from {episodes} rated episodes share "
            "a prompt (same agent, scenario and conversation so far)"
        )
    total = sum(counts.values())
    return f"of {total} pairs of examples with the same prompt, " + ", ".join(
        f"{count} have {reason}" for reason, count in counts.items()
    )


def _passes(scores: Mapping[str, float], minimums: Mapping[str, float]) -> bool:
    """Whether ``scores`` reach every minimum; a dimension the judge did not score fails."""
    return all(scores.get(name, float("-inf")) >= low for name, low in minimums.items())


def _calls_of(record: EpisodeRecord, agent: str) -> list[LLMCall]:
    """``agent``'s calls: scoped ``<episode_id>/<agent>``, or ``<agent>`` for an agent
    built on an unscoped session (the record keeps the agents' calls only)."""
    scopes = {f"{record.episode_id}/{agent}", agent}
    return [call for call in record.calls if call.scope in scopes]


def _metadata(example: TrainingExample) -> dict[str, JsonValue]:
    return {
        "episode_id": example.episode_id,
        "scenario_id": example.scenario_id,
        "agent": example.agent,
        "model": example.model,
        "call_index": example.call_index,
        # None, not {}, when unrated: a column of empty structs does not load in Arrow.
        "scores": dict(example.scores) or None,
        "judge": example.judge,
    }


def _write(
    store: EpisodeStore,
    out: str | Path,
    rows: list[dict[str, Any]],
    *,
    kind: TrainingKind,
    filters: TrainingFilters,
    counts: Counter[str],
    judges: set[str],
    extra: dict[str, Any],
) -> TrainingManifest:
    path = Path(out)
    episodes_read = counts.pop("episodes_read", 0)
    episodes_used = counts.pop("episodes_used", 0)
    manifest = TrainingManifest(
        kind=kind,
        data_file=path.name,
        store=store.location,
        source_tag=filters.tag,
        judges=sorted(judges),
        filters=filters,
        episodes_read=episodes_read,
        episodes_used=episodes_used,
        examples=len(rows),
        skipped=dict(sorted(counts.items())),
        created_at=time.time(),
        **extra,
    )
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    write_text_atomically(str(path), text)
    write_text_atomically(str(manifest_path(path)), manifest.model_dump_json(indent=2) + "\n")
    return manifest
