"""`benchmark`: models under test against a fixed partner on a task set, then the report.

Each model under test plays every task in every role — agent ``k`` played by the model,
the others by the partner — ``seeds`` times (seed ``spec.seed + repetition``), as one
:func:`~sotopia_are.studies.batch` under ``tag``: the same tag resumes (``resume=True``
skips what is complete and rated, reruns the rest), Ctrl-C leaves the running episodes
``incomplete`` for that resume. The report (:mod:`.report`) is then rebuilt from the
store, so it counts every episode of the tag, this run's and earlier ones'.

Games (specs with ``game`` rules) are benchmarked alike: the model under test's seat
is dealt its role by each episode's seed, so over ``seeds`` it plays the roles in turn,
and every game is rated by its outcome verdict (won, payoff) without a judge's model;
with one, its verdict is added beside.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sotopia_are.llm import LLMConfig, Sampling
from sotopia_are.social import EpisodeSpec
from sotopia_are.storage import EpisodeStore, connect

from .batch import BatchPlan, BatchResult, EpisodeOutcome, batch
from .batch_report import BatchProgress
from .config import StudyConfig
from .errors import StudyInputError
from .report import BenchmarkReport, benchmark_report, tested_scenario_id
from .tasks import TaskSet

__all__ = ["BenchmarkResult", "benchmark", "benchmark_specs"]


@dataclass(frozen=True)
class BenchmarkResult:
    """A finished benchmark run: the batch it ran and the report of every episode the
    store holds under its tag."""

    batch: BatchResult
    report: BenchmarkReport


def benchmark_specs(
    specs: Sequence[EpisodeSpec], models: Sequence[str], partners: Sequence[str]
) -> list[tuple[EpisodeSpec, dict[str, str]]]:
    """Every spec in every role, for each model under test and partner: the spec named
    ``<its stable_name()>.tested<k>`` (the episodes' scenario id) and its agents' models
    (agent ``k`` the model's, the others the partner's). ``ValueError`` for no model or
    no partner."""
    if not models or not partners:
        raise StudyInputError("a benchmark needs at least one model under test and a partner")
    planned = []
    for spec in specs:
        for index, agent in enumerate(spec.agent_names):
            # Named, without an id of its own: the batch plans and records it by the name.
            played = EpisodeSpec.model_validate(
                spec.model_dump(exclude={"episode_id"})
                | {"name": tested_scenario_id(spec.stable_name(), index)}
            )
            for model in dict.fromkeys(models):
                for partner in dict.fromkeys(partners):
                    chosen = dict.fromkeys(spec.agent_names, partner) | {agent: model}
                    planned.append((played, chosen))
    return planned


def benchmark(
    tasks: TaskSet | Sequence[EpisodeSpec],
    models: Sequence[str],
    partner: str | Sequence[str],
    *,
    tag: str | None = None,
    judge_model: str | None = None,
    store: EpisodeStore | None = None,
    seeds: int = 1,
    max_turns: int | None = None,
    rubric: str | None = None,
    samples: int | None = None,
    agent_sampling: Sampling | None = None,
    judge_sampling: Sampling | None = None,
    config: LLMConfig | None = None,
    resume: bool = False,
    stale_after: float = 300.0,
    max_attempts: int = 3,
    concurrency: int | None = None,
    workers: int | None = None,
    report_seed: int = 0,
    on_plan: Callable[[BatchPlan], None] | None = None,
    on_outcome: Callable[[EpisodeOutcome], None] | None = None,
    on_progress: Callable[[BatchProgress], None] | None = None,
    run_batch: Callable[..., BatchResult] = batch,
    preflight: bool = True,
    study: StudyConfig | None = None,
) -> BenchmarkResult:
    """Play ``tasks`` (a task set, its specs built from ``store``'s profiles, or specs)
    with each of ``models`` against ``partner`` (a model, or several) in every role,
    ``seeds`` times, rate each episode with ``judge_model`` and store it under ``tag``;
    then report on every episode stored under ``tag`` (intervals drawn with
    ``report_seed``). ``max_turns`` overrides the specs'. The other arguments and the
    errors are :func:`~sotopia_are.studies.batch`'s, which ``run_batch`` is unless given
    another with its signature (e.g. ``sotopia_are.cluster.ray_batch`` bound to an
    address); a task whose profiles are missing is a
    :class:`~sotopia_are.storage.RecordNotFoundError` before anything runs, a model that
    cannot be called as configured a :class:`~sotopia_are.llm.ConfigurationError` (unless
    ``preflight`` is False; see :func:`~sotopia_are.studies.batch`). ``study`` gives
    what the other arguments leave out, as to :func:`~sotopia_are.studies.batch` (an
    argument given wins): the tag, the judge's model (its one judge, rated with whether
    or not the study evaluates), rubric, samples, sampling, LLM settings and
    concurrency; a :class:`StudyInputError` without a tag, or without a judge's model
    when a task is a conversation (games are rated by their outcome verdicts without
    one)."""
    if study is not None:
        tag = tag or study.tag
        if judge_model is None and (study.judge_model or study.model):
            judge_model = study.judge_name()
        # The batch takes its judge from here: a study without one does not evaluate.
        study = study.model_copy(update={"evaluate": judge_model is not None})
    if not tag:
        raise StudyInputError("a benchmark needs a tag (or a study naming one)")
    partners = [partner] if isinstance(partner, str) else list(partner)
    owned = store is None
    used = store if store is not None else connect()
    try:
        specs = tasks.specs(used) if isinstance(tasks, TaskSet) else list(tasks)
        if judge_model is None and any(spec.game is None for spec in specs):
            raise StudyInputError(
                "a benchmark of conversations needs a judge's model (or a study naming "
                "one); only games are rated without one, by their outcome"
            )
        if max_turns is not None:
            specs = [spec.replace(max_turns=max_turns) for spec in specs]
        planned = benchmark_specs(specs, models, partners)
        result = run_batch(
            [spec for spec, _ in planned],
            [chosen for _, chosen in planned],
            tag=tag,
            store=used,
            repeat=seeds,
            judge_model=judge_model,
            rubric=rubric,
            samples=samples,
            agent_sampling=agent_sampling,
            judge_sampling=judge_sampling,
            config=config,
            resume=resume,
            stale_after=stale_after,
            max_attempts=max_attempts,
            concurrency=concurrency,
            workers=workers,
            on_plan=on_plan,
            on_outcome=on_outcome,
            on_progress=on_progress,
            preflight=preflight,
            study=study,
        )
        return BenchmarkResult(result, benchmark_report(used, tag, seed=report_seed))
    finally:
        if owned:
            used.close()
