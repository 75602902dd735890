"""`EpisodeRecorder`: the social runner's sink that stores episodes as they are played.

Give it to the runner (``run_episode(..., sinks=[recorder])`` or ``run_episodes``): the
runner tells it when each episode starts, and it stores the episode as running (call
:meth:`EpisodeRecorder.start` first to give a scenario id, profiles or metadata). Every
completed event then goes to the episode's Redis stream as it happens; at the end the
record is finalised with its status, reason, model calls and usage;
:meth:`EpisodeRecorder.save_evaluation` attaches the judge's verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import EpisodeResult, EpisodeSpec, EpisodeUsage
from sotopia_are.storage.episode_log import EpisodeLog, EpisodeStatus
from sotopia_are.storage.store import EpisodeStore

if TYPE_CHECKING:
    # Only a type here; importing evaluation at run time would load the LLM layer.
    from sotopia_are.evaluation import EvaluatedEpisode

__all__ = ["EpisodeRecorder", "known_cost", "usage_summary"]


class EpisodeRecorder:
    """Stores the episodes of one run (or batch, named by ``tag``) in ``store``.

    ``models`` maps agent names to their model (agents not in it have none, e.g.
    scripted ones); ``evaluator_model`` names the judge's.
    """

    def __init__(
        self,
        store: EpisodeStore,
        *,
        tag: str = "",
        models: Mapping[str, str] | None = None,
        evaluator_model: str = "",
    ) -> None:
        self.store = store
        self.tag = tag
        self.models = dict(models or {})
        self.evaluator_model = evaluator_model
        self._started: set[str] = set()

    def start(
        self,
        spec: EpisodeSpec,
        *,
        scenario_id: str = "",
        scenario_codename: str = "",
        agent_profiles: Sequence[str] = (),
        metadata: Mapping[str, JsonValue] | None = None,
    ) -> EpisodeLog:
        """Store the episode of ``spec`` as running (see ``EpisodeStore.start_episode``).

        ``scenario_id`` defaults to the spec's episode id (there is no stored scenario).
        """
        self._started.add(spec.episode_id)
        return self.store.start_episode(
            EpisodeLog(
                pk=spec.episode_id,
                tag=self.tag,
                scenario_id=scenario_id or spec.episode_id,
                scenario_codename=scenario_codename,
                agents=list(spec.agent_names),
                agent_profiles=list(agent_profiles),
                models=[self.models.get(name, "") for name in spec.agent_names],
                evaluator_model=self.evaluator_model,
                seed=spec.seed,
                spec=spec.model_dump(mode="json"),
                metadata=dict(metadata or {}),
            )
        )

    def on_episode_start(self, episode_id: str, spec: EpisodeSpec) -> None:
        """Store the episode as running, unless :meth:`start` already did (the runner
        calls this before the episode's first event)."""
        if episode_id not in self._started:
            self.start(spec)

    def on_event(self, episode_id: str, event: CompletedEvent) -> None:
        """Append ``event`` to the episode's stream (the runner calls this)."""
        self.store.append_event(episode_id, event)

    def on_episode_end(self, episode_id: str, result: EpisodeResult) -> None:
        """Store the agents' model calls and finalise the record in one transaction (the
        runner calls this): if any of it fails, none of it is written."""
        self.store.finish_episode(
            episode_id,
            status=result.status,
            termination_reason=result.reason if result.status is EpisodeStatus.COMPLETE else "",
            error=result.reason if result.status is EpisodeStatus.FAILED else "",
            usage=usage_summary(result.usage),
            cost_usd=known_cost(result.usage),
            calls=[
                call.model_dump(mode="json")
                for calls in result.call_records.values()
                for call in calls
            ],
        )

    def save_evaluation(self, evaluated: EvaluatedEpisode) -> EpisodeLog:
        """Attach the judge's verdict, calls and the new usage totals to a complete episode,
        in one transaction.

        An unrated episode (its run failed) is left as it is and returned unchanged.
        """
        episode_id = evaluated.episode.episode_id
        evaluation = evaluated.evaluation
        if evaluation is None:
            return self.store.get_episode(episode_id)
        verdict: dict[str, Any] = evaluation.model_dump(mode="json", exclude={"calls"})
        usage = evaluated.usage
        return self.store.save_evaluation(
            episode_id,
            scores={
                rating.agent: {**rating.scores(), "overall_score": rating.overall}
                for rating in evaluation.ratings
            },
            evaluation={
                "verdict": verdict,
                "response": evaluated.response.model_dump(mode="json"),
                "termination": evaluated.termination.reason,
            },
            usage=usage_summary(usage),
            cost_usd=known_cost(usage),
            calls=[call.model_dump(mode="json") for call in evaluation.calls],
        )


def usage_summary(usage: EpisodeUsage) -> dict[str, JsonValue]:
    """``usage`` as the JSON the episode record keeps."""
    return {
        "calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cost_usd": usage.cost_usd,
        "calls_without_cost": usage.calls_without_cost,
        "normalized_calls": usage.normalized_calls,
        "repaired_calls": usage.repaired_calls,
    }


def known_cost(usage: EpisodeUsage) -> float | None:
    """The summed known cost, or None when no call's cost is known (0 would be a lie)."""
    return usage.cost_usd if usage.calls > usage.calls_without_cost else None
