"""`EpisodeSummary`: what a listing shows of a stored episode, without its events or calls."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sotopia_are.social import EpisodeStatus

__all__ = ["EpisodeSummary"]


class EpisodeSummary(BaseModel):
    """One stored episode in brief: its id, status, tag, scenario, agents (in the spec's
    order) and their models (``""`` when scripted), the number of events and verdicts,
    when it was created (Unix seconds), and ``overall_score`` per agent (in the spec's
    order) of one verdict: the latest rated one (of the judge the listing asked for).

    ``judge`` and ``rubric`` name that verdict (``""`` when no verdict gave scores);
    ``judges`` are the judge models of every verdict, in the order given, so a listing
    can say when there is more than one to choose from. ``problems`` are what the checks
    of an import found wrong with the episode, when it was kept anyway (see
    :attr:`EpisodeRecord.problems`). Its validator is built when first used
    (``defer_build``): a batch lists no summary, and building it was 8 M instructions of
    its driver's start."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    episode_id: str
    status: EpisodeStatus
    tag: str = ""
    scenario_id: str = ""
    agents: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    event_count: int = 0
    verdict_count: int = 0
    created_at: float = 0.0
    reason: str = ""
    judge: str = ""
    rubric: str = ""
    judges: list[str] = Field(default_factory=list)
    overall: dict[str, float] = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list)
