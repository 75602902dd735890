"""A batch's plan: its episodes under stable ids, and on resume what is left to do.

Every episode of a batch has a deterministic id (``stable_episode_id`` of the tag, the
spec's name or id, the models and the repetition), so a resumed batch finds what a previous run
of the same batch completed and skips it. It reruns the failed and incomplete episodes —
unless one was already started ``max_attempts`` times (``EpisodeLog.attempt``): a poisoned
episode is then left as it is, with its reason, and listed in the plan as given up — and
the ``running`` ones with no event for ``stale_after`` seconds (a dead run left them; they
are marked ``incomplete`` first); more recently active ones belong to a run still going
and are left alone. With a judge, complete episodes without a rated verdict of its model
(never rated, or every judge sample failed; another judge's verdict, such as a game's
outcome, does not count) are rated from their stored record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from sotopia_are.llm import Sampling
from sotopia_are.social import EpisodeSpec, EpisodeStatus
from sotopia_are.storage import EpisodeLog, EpisodeStore, stable_episode_id

from .errors import BatchError, StudyInputError

__all__ = ["BatchEpisode", "BatchPlan", "ModelChoice", "plan_batch", "plan_run"]


ModelChoice = Mapping[str, str] | Sequence[Mapping[str, str]]
"""The agents' models: one mapping of agent name → model for every spec, or one mapping
per spec, in the specs' order (e.g. a benchmark's model under test in one role)."""


@dataclass(frozen=True)
class BatchEpisode:
    """One episode of a batch: its spec (with its stable id), its scenario's id and the
    agents' models; ``judge_only``: it is complete but unrated, so only the judge runs."""

    spec: EpisodeSpec
    scenario_id: str
    models: dict[str, str]
    judge_only: bool = False


@dataclass(frozen=True)
class BatchPlan:
    """What a batch will do: every episode planned, the ``pending`` ones it runs, how many
    it skips as complete, the ids it leaves to another run still playing them, and the
    episodes it gives up on (``{id: reason}``: failed or interrupted ``max_attempts``
    times); ``stale_after`` and ``max_attempts`` are the limits it was made with."""

    tag: str
    planned: tuple[BatchEpisode, ...]
    pending: tuple[BatchEpisode, ...]
    skipped: int
    busy: frozenset[str] = frozenset()
    given_up: Mapping[str, str] = field(default_factory=dict)
    stale_after: float = 300.0
    max_attempts: int = 3

    @property
    def rate_only(self) -> int:
        """Pending episodes that are complete and only need the judge."""
        return sum(item.judge_only for item in self.pending)

    @property
    def to_play(self) -> int:
        """Pending episodes that are played (new, failed, interrupted or left stale)."""
        return len(self.pending) - self.rate_only


def plan_batch(
    specs: Sequence[EpisodeSpec], models: ModelChoice, *, tag: str, repeat: int = 1
) -> list[BatchEpisode]:
    """Each spec ``repeat`` times, under a stable id and seed ``spec.seed + repetition``,
    played by ``models`` (agent name → model, or one such mapping per spec).

    The stable id is a hash of ``tag``, the spec's :meth:`~EpisodeSpec.stable_name` (its
    ``episode_id`` if given, else its ``name``, else its ``content_id()``), the models
    and the repetition, so a resumed batch plans the same ids again; the episodes'
    scenario id is the spec's ``name``, else that stable name. :class:`StudyInputError`
    naming the agents without a model, for two specs under one stable name and models
    (the same spec more than once is ``repeat``), or for not one mapping per spec."""
    each = [models] * len(specs) if isinstance(models, Mapping) else list(models)
    if len(each) != len(specs):
        raise StudyInputError(
            f"{len(each)} model mappings for {len(specs)} specs; give one per spec"
        )
    planned: list[BatchEpisode] = []
    ids: set[str] = set()
    shared: set[str] = set()  # stable names planned twice under the same models
    for spec, given in zip(specs, each, strict=True):
        name = spec.stable_name()
        missing = [agent for agent in spec.agent_names if agent not in given]
        if missing:
            raise StudyInputError(f"spec {name!r}: no model for {', '.join(missing)}")
        chosen = {agent: given[agent] for agent in spec.agent_names}
        for repetition in range(repeat):
            episode_id = stable_episode_id(
                tag, name, json.dumps(chosen, sort_keys=True), str(repetition)
            )
            played = spec.replace(episode_id=episode_id, seed=spec.seed + repetition)
            if episode_id in ids:
                shared.add(name)
            ids.add(episode_id)
            planned.append(BatchEpisode(played, spec.name or name, chosen))
    # Two specs under one name and models would be planned under the same ids: one would
    # be taken for the other's episodes, on resume too.
    if shared:
        raise StudyInputError(
            f"more than one spec of the batch is named {', '.join(map(repr, sorted(shared)))} "
            "(a spec's episode_id, else its name; without either, equal specs share one); give "
            "each spec its own name, and play a spec more than once with repeat (-n)"
        )
    return planned


def plan_run(
    store: EpisodeStore,
    planned: Sequence[BatchEpisode],
    *,
    tag: str,
    resume: bool,
    stale_after: float,
    judge: str | None,
    max_attempts: int,
    sampling: Sampling,
) -> BatchPlan:
    """What a run of batch ``tag`` does with its ``planned`` episodes in ``store``.

    Without ``resume``: all of them, or :class:`BatchError` if any already exists. With it:
    the ``running`` episodes idle for ``stale_after`` seconds are marked ``incomplete``;
    complete ones are skipped (rated only, when a ``judge`` model is given and no verdict
    of it has scores), those
    still running left to their run, those started ``max_attempts`` times given up on, the
    rest played again. :class:`BatchError` if the complete ones were played with agent
    sampling other than ``sampling``."""
    ids = {item.spec.episode_id for item in planned}
    if not resume:
        existing = set(store.episode_ids(tag=tag)) & ids
        if existing:
            raise BatchError(
                f"batch {tag!r} already has {len(existing)} of these episodes in "
                f"{store.location}; resume it (resume=True, --resume) to skip the complete ones "
                "and rerun the others, or use another tag"
            )
        return BatchPlan(tag, tuple(planned), tuple(planned), 0)
    store.mark_interrupted(tag=tag, idle_for=stale_after)
    busy = set(store.episode_ids(tag=tag, status=EpisodeStatus.RUNNING)) & ids
    complete = [
        episode
        for episode in store.list_episodes(tag=tag, status=EpisodeStatus.COMPLETE)
        if episode.pk in ids
    ]
    _check_same_sampling(complete, sampling, tag)
    # No scores of this judge: never rated by it, or every sample of it failed.
    unjudged = (
        {
            summary.episode_id
            for summary in store.summaries(tag=tag, status=EpisodeStatus.COMPLETE, judge=judge)
            if summary.episode_id in ids and not summary.overall
        }
        if judge is not None
        else set()
    )
    done = {episode.pk for episode in complete} - unjudged
    given_up = {
        episode.pk: f"{episode.error or episode.status.value} (started {episode.attempt} times)"
        for status in (EpisodeStatus.FAILED, EpisodeStatus.INCOMPLETE)
        for episode in store.list_episodes(tag=tag, status=status)
        if episode.pk in ids and episode.attempt >= max_attempts
    }
    pending = tuple(
        replace(item, judge_only=item.spec.episode_id in unjudged)
        for item in planned
        if item.spec.episode_id not in done | busy | given_up.keys()
    )
    return BatchPlan(
        tag,
        tuple(planned),
        pending,
        len(done),
        frozenset(busy),
        given_up,
        stale_after=stale_after,
        max_attempts=max_attempts,
    )


def _check_same_sampling(complete: Sequence[EpisodeLog], sampling: Sampling, tag: str) -> None:
    """:class:`BatchError` if a complete episode of the batch was played with other agent
    sampling than ``sampling``: a resume must not mix settings in one study. Episodes that
    did not record theirs (written before sampling was kept) are not compared."""
    for episode in complete:
        # Compared as text: extra settings are a dict, so a Sampling is not hashable.
        played = {str(Sampling.model_validate(s)) for s in episode.agent_sampling.values()}
        if played and played != {str(sampling)}:
            provider = "the provider's"
            before = ", ".join(sorted(text or provider for text in played))
            raise BatchError(
                f"batch {tag!r} was played with agent sampling {before} (episode "
                f"{episode.pk}), not {str(sampling) or provider}: resume it with the "
                "same settings, or use another tag"
            )
