"""`EpisodeRecorder`: the social runner's sink that stores episodes as they are played.

Give it to the runner (``run_episode(..., sinks=[recorder])`` or ``run_episodes``): the
runner tells it when each episode starts, and it stores the episode as running (call
:meth:`EpisodeRecorder.start` first to give a scenario id, profiles or metadata). Every
completed event then goes to the episode's Redis stream as it happens; at the end the
record is finalised with its status, reason, model calls and usage (or the calls go to
the episode's calls stream as they are made, :meth:`EpisodeRecorder.on_call`, when a
restart must not lose them);
:meth:`EpisodeRecorder.save_verdict` attaches a judge's verdict. The episode is stored
as an :class:`~sotopia_are.record.EpisodeRecord` (``store.load`` reads it back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import JsonValue

from sotopia_are.llm import LLMCall, Sampling
from sotopia_are.record import RECORD_VERSION, EpisodeRecord, Verdict, agent_calls
from sotopia_are.record.episode_record import usage_after
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import EpisodeResult, EpisodeSpec, EpisodeStatus
from sotopia_are.social.spec import check_safe_id
from sotopia_are.storage.episode_layout import sampling_fields, usage_summary
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.store import EpisodeStore
from sotopia_are.storage.store.written import changed_log

__all__ = ["EpisodeRecorder"]


class EpisodeRecorder:
    """Stores the episodes of one run (or batch, named by ``tag``) in ``store``.

    ``models`` maps agent names to their model (agents not in it have none, e.g.
    scripted ones) and ``sampling`` the LLM agents to their sampling settings;
    ``evaluator_model`` names the judge's. ``ValueError`` for a ``tag``
    outside :data:`~sotopia_are.social.spec.SAFE_ID_CHARACTERS`, before anything is stored.
    """

    def __init__(
        self,
        store: EpisodeStore,
        *,
        tag: str = "",
        models: Mapping[str, str] | None = None,
        sampling: Mapping[str, Sampling] | None = None,
        evaluator_model: str = "",
    ) -> None:
        self.store = store
        self.tag = check_safe_id(tag, "tag", empty=True)
        self.models = dict(models or {})
        self.sampling = dict(sampling or {})
        self.evaluator_model = evaluator_model
        self._started: set[str] = set()
        self._streamed: dict[str, list[LLMCall]] = {}

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

        ``scenario_id`` defaults to the spec's ``name``, else its episode id (there is no
        stored scenario).
        """
        self._started.add(spec.episode_id)
        # Starting afresh drops the stored calls (and events): so are the streamed ones.
        self._streamed.pop(spec.episode_id, None)
        episode = EpisodeLog(
            pk=spec.episode_id,
            tag=self.tag,
            scenario_id=scenario_id or spec.name or spec.episode_id,
            scenario_codename=scenario_codename,
            agents=list(spec.agent_names),
            agent_profiles=list(agent_profiles),
            models=[self.models.get(name, "") for name in spec.agent_names],
            agent_sampling=sampling_fields(
                {n: self.sampling[n] for n in spec.agent_names if n in self.sampling}
            ),
            evaluator_model=self.evaluator_model,
            seed=spec.seed,
            metadata=dict(metadata or {}),
            record_version=RECORD_VERSION,
        )
        # The spec's JSON dump is JSON: validating it as JSON again (a walk of some 2 kB,
        # a third of making the record) would change nothing. Built here by validation
        # and held by no one else, the record is not validated again by the start.
        episode = changed_log(episode, {}, {"spec": spec.model_dump(mode="json")})
        return self.store._start_built(episode)

    def on_episode_start(self, episode_id: str, spec: EpisodeSpec) -> None:
        """Store the episode as running, unless :meth:`start` already did (the runner
        calls this before the episode's first event)."""
        if episode_id not in self._started:
            self.start(spec)

    def on_event(self, episode_id: str, event: CompletedEvent) -> None:
        """Append ``event`` to the episode's stream (the runner calls this), with the other
        episodes' appends queued in the same short window (``EpisodeStore.queue_event``)."""
        self.store.queue_event(episode_id, event)

    def on_call(self, episode_id: str, call: LLMCall) -> None:
        """Append ``call`` to the running episode's calls stream now, as it is made.

        An episode whose calls are streamed this way has none written at its end: its
        calls are the streamed ones, in the order streamed (its usage their sum), not the
        result's — so stream every call of the episode, or none.
        """
        self.store.append_call(episode_id, call)
        self._streamed.setdefault(episode_id, []).append(call)

    def on_episode_end(self, episode_id: str, result: EpisodeResult) -> None:
        """Store the agents' model calls (unless :meth:`on_call` streamed them) and
        finalise the record in one transaction (the runner calls this): if any of it
        fails, none of it is written."""
        # The events are in the stream already: only the calls and the ending are written.
        streamed = self._streamed.pop(episode_id, None)
        calls = agent_calls(result) if streamed is None else ()
        usage = usage_after(None, calls if streamed is None else streamed)  # Usage.of's sums
        complete = result.status is EpisodeStatus.COMPLETE
        self.store.finish_episode(
            episode_id,
            status=result.status,
            termination_reason=result.reason if complete else "",
            error="" if complete else result.reason,
            usage=usage_summary(usage),
            cost_usd=usage.cost_usd,
            calls=calls,
            turns_played=result.turns_played,
            failed_agent=result.failed_agent or "",
        )

    def save_verdict(self, verdict: Verdict, episode_id: str) -> EpisodeRecord:
        """Attach a judge's verdict to the complete episode ``episode_id`` (see
        ``EpisodeStore.add_verdict``); the record with it."""
        return self.store.add_verdict(episode_id, verdict)
