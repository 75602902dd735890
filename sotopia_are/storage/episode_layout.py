"""How an :class:`~sotopia_are.record.EpisodeRecord` is laid out in the store: its
``EpisodeLog`` (verdicts included) plus its event and call streams.

These are the conversions; :class:`~sotopia_are.storage.EpisodeStore`'s ``load``,
``save_record`` and ``add_verdict`` do the reading and writing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from sotopia_are.evaluation import AgentRating, Rubric, builtin_rubrics
from sotopia_are.llm import Sampling, Usage
from sotopia_are.record import EpisodeRecord, EpisodeSummary, Verdict, load_record
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage.episode_log import EpisodeLog

__all__ = [
    "LISTED_FIELDS",
    "episode_log_of",
    "index_fields",
    "listing_of",
    "record_from_stored",
    "reordered_on_read",
    "sampling_fields",
    "summary_from_listing",
    "summary_of",
    "usage_summary",
    "verdicts_in_rubric_order",
]


def index_fields(record: EpisodeRecord) -> dict[str, Any]:
    """What the ``EpisodeLog`` repeats of ``record`` for listing and filtering."""
    usage = record.usage
    scores = record.scores
    return {
        "scores": dict(scores),
        "usage": usage_summary(usage),
        "cost_usd": usage.cost_usd,
        "evaluator_model": scores.judge_model,
    }


def sampling_fields(sampling: Mapping[str, Sampling]) -> dict[str, dict[str, JsonValue]]:
    """The agents' ``sampling`` as the JSON an ``EpisodeLog`` keeps."""
    return {name: settings.model_dump(mode="json") for name, settings in sampling.items()}


def usage_summary(usage: Usage) -> dict[str, JsonValue]:
    """``usage`` as the JSON an ``EpisodeLog`` keeps."""
    return usage.model_dump(mode="json")


def record_from_stored(
    log: EpisodeLog,
    events: Sequence[ExportedCompletedEvent],
    calls: Sequence[Mapping[str, Any]],
) -> EpisodeRecord:
    """The record of a stored episode: its ``EpisodeLog``, events and calls (an older
    layout is migrated, and the dimensions of verdicts stored with sorted keys put back
    in their built-in rubric's order). ``ValueError`` if it was stored without a spec."""
    if log.record_version == 0:
        record = load_record({**log.to_document(), "events": list(events), "calls": list(calls)})
    else:
        record = _record_of(log, events, calls)
    return verdicts_in_rubric_order(record)


def verdicts_in_rubric_order(record: EpisodeRecord) -> EpisodeRecord:
    """``record`` as read from the store: the dimensions of verdicts stored with sorted
    keys put back in their built-in rubric's order (``record`` itself when none was)."""
    if not reordered_on_read(record.verdicts):
        return record
    return record.model_copy(update={"verdicts": tuple(map(_in_rubric_order, record.verdicts))})


def _record_of(
    log: EpisodeLog,
    events: Sequence[ExportedCompletedEvent],
    calls: Sequence[Mapping[str, Any]],
) -> EpisodeRecord:
    return load_record(
        {
            "version": log.record_version,
            "episode_id": log.pk,
            "spec": log.spec,
            "models": dict(zip(log.agents, log.models, strict=False)),
            "agent_sampling": log.agent_sampling,
            "tag": log.tag,
            "scenario_id": log.scenario_id,
            "status": log.status.value,
            "reason": log.termination_reason or log.error,
            "failed_agent": log.failed_agent or None,
            "turns_played": log.turns_played,
            "events": list(events),
            "calls": list(calls),
            "verdicts": log.verdicts,
            "problems": log.problems,
        }
    )


def reordered_on_read(verdicts: Sequence[Verdict]) -> bool:
    """Whether reading ``verdicts`` back from the store changes them: whether
    :func:`verdicts_in_rubric_order` puts the dimensions of one of them in another order."""
    return any(map(_sorted_by_store, verdicts))


def _sorted_by_store(verdict: Verdict) -> bool:
    """Whether ``verdict`` looks as the store left verdicts before it kept their order:
    a rubric of several dimensions, each rating's dimensions in alphabetical order."""
    return any(
        len(rating.dimensions) > 1 and list(rating.dimensions) == sorted(rating.dimensions)
        for rating in verdict.evaluation.ratings
    )


def _in_rubric_order(verdict: Verdict) -> Verdict:
    """``verdict`` with its dimensions in its built-in rubric's order; unchanged when its
    rubric is not a built-in one or rates other dimensions (its order is unknown)."""
    if verdict.rubric not in builtin_rubrics():
        return verdict
    order = Rubric.load(verdict.rubric).dimension_names
    ratings = []
    for rating in verdict.evaluation.ratings:
        if set(rating.dimensions) != set(order):
            return verdict
        ordered = {name: rating.dimensions[name] for name in order}
        ratings.append(AgentRating(agent=rating.agent, overall=rating.overall, dimensions=ordered))
    evaluation = verdict.evaluation.model_copy(update={"ratings": ratings})
    return verdict.model_copy(update={"evaluation": evaluation})


def episode_log_of(record: EpisodeRecord) -> EpisodeLog:
    """The ``EpisodeLog`` that stores ``record`` (streams apart)."""
    complete = record.status is EpisodeStatus.COMPLETE
    return EpisodeLog(
        pk=record.episode_id,
        tag=record.tag,
        scenario_id=record.scenario_id,
        agents=list(record.spec.agent_names),
        models=[record.models.get(name, "") for name in record.spec.agent_names],
        agent_sampling=sampling_fields(record.agent_sampling),
        seed=record.spec.seed,
        spec=record.spec.model_dump(mode="json"),
        status=record.status,
        termination_reason=record.reason if complete else "",
        error="" if complete else record.reason,
        record_version=record.version,
        failed_agent=record.failed_agent or "",
        turns_played=record.turns_played,
        verdicts=[verdict.model_dump(mode="json") for verdict in record.verdicts],
        problems=list(record.problems),
        **index_fields(record),
    )


LISTED_FIELDS = (
    "status",
    "tag",
    "scenario_id",
    "agents",
    "models",
    "event_count",
    "created_at",
    "termination_reason",
    "error",
    "problems",
    "record_version",
)
"""The small fields of an ``EpisodeLog`` a listing reads as they are; its verdicts it
reads as :func:`listing_of` reduces them."""


def listing_of(log: EpisodeLog) -> dict[str, JsonValue]:
    """What a listing shows of the stored ``log``'s verdicts, as the JSON the store keeps
    beside the record (see :data:`~sotopia_are.storage.keys.SUMMARY_FIELD`): each reduced
    to its judge, rubric, prompt and overall scores (``None`` when it rated nothing), so
    that listing reads a few hundred bytes an episode instead of their reasoning. The
    rest of a summary is the record's :data:`LISTED_FIELDS`, read as they are."""
    legacy: JsonValue = None
    if log.record_version:
        verdicts: list[JsonValue] = [_verdict_digest(verdict) for verdict in log.verdicts]
    else:
        # The older layout kept one verdict, with the latest scores as index fields.
        verdict = (log.evaluation or {}).get("verdict")
        overall = {a: s["overall_score"] for a, s in log.scores.items() if "overall_score" in s}
        legacy = {
            "judge_model": log.evaluator_model,
            "rubric": str(verdict.get("rubric", "")) if isinstance(verdict, dict) else "",
            "overall": dict(overall),
        }
        verdicts = [{"judge_model": log.evaluator_model}] * bool(log.evaluation)
    return {"legacy": legacy, "verdicts": verdicts}


def _verdict_digest(verdict: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """A stored verdict's JSON as a listing needs it; ``overall`` is ``None`` when it
    rated nothing. The verdict is read as the JSON it is stored as (building its model,
    its calls included, would cost a listing far more)."""
    evaluation = verdict.get("evaluation")
    ratings = evaluation.get("ratings") if isinstance(evaluation, dict) else None
    overall: JsonValue = None
    if ratings and isinstance(ratings, list):
        overall = {
            str(r["agent"]): float(r["overall"])  # type: ignore[arg-type]
            for r in ratings
            if isinstance(r, dict)
        }
    return {
        "judge_model": str(verdict.get("judge_model", "")),
        "rubric": str(verdict.get("rubric", "")),
        "prompt": str(verdict.get("prompt", "")),
        "overall": overall,
    }


def summary_of(log: EpisodeLog, judge: str | None = None) -> EpisodeSummary:
    """What a listing shows of the stored ``log``, read from what it repeats of its record
    (no stream is read): the scores of its latest rated verdict (of ``judge``, a judge
    model or verdict key), agents in the spec's order."""
    return summary_from_listing(log, listing_of(log), judge)


def summary_from_listing(
    log: EpisodeLog, listing: Mapping[str, Any], judge: str | None = None
) -> EpisodeSummary:
    """:func:`summary_of` from ``log``'s :data:`LISTED_FIELDS` (the others are not read)
    and :func:`listing_of`'s ``listing`` of its verdicts. ``ValueError`` for a listing
    this module did not write."""
    try:
        verdicts = list(listing["verdicts"])
        judge_model, rubric, overall = _listed_scores(verdicts, listing["legacy"], judge)
        judges = [str(v["judge_model"]) for v in verdicts]
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"not a listing the store wrote: {error!r}") from None
    return EpisodeSummary(
        episode_id=log.pk,
        status=log.status,
        tag=log.tag,
        scenario_id=log.scenario_id,
        agents=log.agents,
        models=log.models,
        event_count=log.event_count,
        verdict_count=len(verdicts),
        created_at=log.created_at,
        reason=log.termination_reason or log.error,
        judge=judge_model,
        rubric=rubric,
        judges=judges,
        overall={agent: overall[agent] for agent in [*log.agents, *overall] if agent in overall},
        problems=log.problems,
    )


def _listed_scores(
    verdicts: Sequence[Mapping[str, Any]], legacy: Mapping[str, Any] | None, judge: str | None
) -> tuple[str, str, dict[str, float]]:
    """The judge model, rubric and overall score per agent of the verdict a listing
    shows, from :func:`listing_of`'s verdict digests (``legacy``: the older layout's
    one verdict)."""
    if legacy is not None:
        model, overall = str(legacy["judge_model"]), dict(legacy["overall"])
        if judge is not None and judge != model:
            return "", "", {}
        return (model, str(legacy["rubric"]), overall) if overall else ("", "", {})
    for verdict in reversed(verdicts):
        model, rubric = str(verdict["judge_model"]), str(verdict["rubric"])
        if verdict["overall"] is None:
            continue  # not rated
        if judge is not None and not Verdict.names_judge(judge, model, rubric, verdict["prompt"]):
            continue
        return model, rubric, dict(verdict["overall"])
    return "", "", {}
