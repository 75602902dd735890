"""`EpisodeLog`: the stored record of one episode, and its status.

The record holds what an episode *is* (scenario, agents, models, tag), how it went
(status, timestamps, termination reason, error) and what it scored and cost. What
*happened* is not here: the completed events are in the episode's stream
(``events_key``), the single source of truth every transcript is derived from.
"""

from __future__ import annotations

import hashlib
from typing import Annotated

from pydantic import JsonValue

from sotopia_are.social import EpisodeStatus
from sotopia_are.storage.fields import AS_JSON_TEXT, AS_ORDERED_JSON_TEXT
from sotopia_are.storage.keys import episode_calls_key, episode_events_key
from sotopia_are.storage.redis_om_import import Field
from sotopia_are.storage.stored_model import StoredModel

__all__ = ["EpisodeLog", "EpisodeStatus", "stable_episode_id"]


class EpisodeLog(StoredModel, index=True):  # type: ignore[call-arg]
    """One episode. Times are Unix seconds; ``models[i]`` is ``agents[i]``'s model
    (``""`` for an agent without one, e.g. scripted or human); ``agent_sampling`` holds
    each LLM agent's sampling settings (``sotopia_are.llm.Sampling`` as JSON).

    ``spec`` is the social runner's ``EpisodeSpec`` as JSON (enough, with the events, to
    export, import and replay the episode). ``record_version`` is the
    :class:`~sotopia_are.record.EpisodeRecord` version the episode was written as: 0 for
    the older layout, whose one verdict is ``evaluation`` (its judge's calls in the calls
    stream); from 1 the verdicts are ``verdicts``, each with its judge's calls. ``scores``
    (the latest rated verdict's, per agent, ``overall_score`` included; its judge is
    ``evaluator_model``), ``usage`` (the totals of every call, as
    ``sotopia_are.llm.Usage``) and ``cost_usd`` repeat what the record derives, so that
    listing and filtering need not read the streams. ``verdicts`` and ``scores`` keep
    their keys in order (rubric order, participant order); episodes stored before they
    did have them sorted, which reading repairs where the rubric is a built-in one.
    ``problems`` flag an episode imported leniently (see ``EpisodeRecord.problems``).
    """

    tag: str = ""
    scenario_id: str = ""
    scenario_codename: str = ""
    agents: Annotated[list[str], AS_JSON_TEXT] = Field(default_factory=list)
    agent_profiles: Annotated[list[str], AS_JSON_TEXT] = Field(default_factory=list)
    models: Annotated[list[str], AS_JSON_TEXT] = Field(default_factory=list)
    agent_sampling: Annotated[dict[str, dict[str, JsonValue]], AS_JSON_TEXT] = Field(
        default_factory=dict
    )
    evaluator_model: str = ""
    seed: int | None = None
    spec: Annotated[dict[str, JsonValue], AS_JSON_TEXT] | None = None
    status: EpisodeStatus = EpisodeStatus.RUNNING
    attempt: int = 0
    created_at: float = 0.0
    started_at: float = 0.0
    updated_at: float = 0.0
    finished_at: float | None = None
    event_count: int = 0
    termination_reason: str = ""
    error: str = ""
    scores: Annotated[dict[str, dict[str, float]], AS_ORDERED_JSON_TEXT] = Field(
        default_factory=dict
    )
    evaluation: Annotated[dict[str, JsonValue], AS_JSON_TEXT] | None = None
    record_version: int = 0
    failed_agent: str = ""
    turns_played: int = 0
    verdicts: Annotated[list[dict[str, JsonValue]], AS_ORDERED_JSON_TEXT] = Field(
        default_factory=list
    )
    problems: Annotated[list[str], AS_JSON_TEXT] = Field(default_factory=list)
    evaluated_at: float | None = None
    usage: Annotated[dict[str, JsonValue], AS_JSON_TEXT] = Field(default_factory=dict)
    cost_usd: float | None = None
    metadata: Annotated[dict[str, JsonValue], AS_JSON_TEXT] = Field(default_factory=dict)

    class Meta:
        model_key_prefix = "EpisodeLog"

    @property
    def judge_warnings(self) -> list[str]:
        """What was suspicious in the stored verdict (empty when unrated or clean)."""
        verdict = (self.evaluation or {}).get("verdict")
        warnings = verdict.get("warnings") if isinstance(verdict, dict) else None
        return [str(w) for w in warnings] if isinstance(warnings, list) else []

    @property
    def events_key(self) -> str:
        """The stream holding the episode's completed events."""
        return episode_events_key(self.pk)

    @property
    def calls_key(self) -> str:
        """The stream holding the episode's model calls."""
        return episode_calls_key(self.pk)


def stable_episode_id(tag: str, *parts: str) -> str:
    """A reproducible episode id for the batch ``tag`` and what identifies the episode in
    it (scenario, agents, models, repetition number...), so a resumed batch finds the
    episodes it already ran."""
    digest = hashlib.sha256("\x1f".join((tag, *parts)).encode()).hexdigest()
    return f"ep-{digest[:24]}"
