"""How an :class:`~sotopia_are.record.EpisodeRecord` is laid out in the store: its
``EpisodeLog`` (verdicts included) plus its event and call streams.

These are the conversions; :class:`~sotopia_are.storage.EpisodeStore`'s ``load``,
``save_record`` and ``add_verdict`` do the reading and writing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from sotopia_are.llm import Sampling, Usage
from sotopia_are.record import EpisodeRecord, load_record
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage.episode_log import EpisodeLog

__all__ = [
    "episode_log_of",
    "index_fields",
    "record_from_stored",
    "sampling_fields",
    "usage_summary",
]


def index_fields(record: EpisodeRecord) -> dict[str, Any]:
    """What the ``EpisodeLog`` repeats of ``record`` for listing and filtering."""
    usage = record.usage
    return {
        "scores": record.scores,
        "usage": usage_summary(usage),
        "cost_usd": usage.cost_usd,
        "evaluator_model": record.verdict.judge_model if record.verdict else "",
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
    layout is migrated). ``ValueError`` if it was stored without a spec."""
    if log.record_version == 0:
        return load_record({**log.to_document(), "events": list(events), "calls": list(calls)})
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
        }
    )


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
        **index_fields(record),
    )
