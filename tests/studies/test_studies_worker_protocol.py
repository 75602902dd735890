"""The worker protocol is public: an executor written with its public names alone runs a
batch, loses a job's episodes as ``incomplete`` outcomes that a resume plays again, and
``sotopia_are.cluster`` imports no private name of the studies."""

import ast
import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from test_studies_batch_throughput import MODEL, config, plays, spec

import sotopia_are as sa
from sotopia_are.storage import EpisodeStore
from sotopia_are.studies import BatchResult
from sotopia_are.studies.worker_protocol import (
    EpisodeOutcome,
    Heartbeat,
    Started,
    WorkerJob,
    WorkerReport,
)
from sotopia_are.studies.workers import lost_outcome, run_job
from sotopia_are.testing import LocalLLMServer

PACKAGE = Path(sa.__file__).parent


class InProcess:
    """Runs each job in this process in turn with :func:`run_job`, except the ``lose``-th,
    whose worker is "lost" before it starts."""

    def __init__(self, lose: int | None = None) -> None:
        self.lose = lose
        self.reports: list[WorkerReport] = []

    def __call__(
        self,
        jobs: Sequence[WorkerJob],
        take: Callable[[WorkerReport], None],
        store: EpisodeStore,
        *,
        judge: str | None,
    ) -> None:
        def report(item: WorkerReport) -> None:
            self.reports.append(item)
            take(item)

        for index, job in enumerate(jobs):
            if index != self.lose:
                run_job(job, report)
                continue
            for item in job.episodes:
                take(lost_outcome(store, item.spec.episode_id, "the test lost it", judge))


def batch(
    server: LocalLLMServer, store: EpisodeStore, executor: InProcess, resume: bool = False
) -> BatchResult:
    specs = [spec(f"p{n}") for n in range(6)]
    return sa.batch(
        specs, MODEL, tag="pub", store=store, judge_model=MODEL, config=config(server),
        workers=3, resume=resume, executor=executor,
    )  # fmt: skip


def test_an_executor_of_public_names_runs_a_batch_and_a_lost_job_is_resumed(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = plays
    executor = InProcess(lose=1)
    result = batch(llm_server, store, executor)

    lost = {o.episode_id for o in result.outcomes if o.status is sa.EpisodeStatus.INCOMPLETE}
    assert len(lost) == 2 and result.unfinished == 2
    assert all(o.reason == "not started: the test lost it" for o in result.outcomes
               if o.episode_id in lost)  # fmt: skip
    played = {o.episode_id for o in result.outcomes} - lost
    assert played == store.completed_episode_ids("pub") and len(played) == 4
    # What the workers reported: a start and an outcome per episode they played, and
    # heartbeats ending with nothing in flight.
    started = {r.episode_id for r in executor.reports if isinstance(r, Started)}
    reported = {r.episode_id for r in executor.reports if isinstance(r, EpisodeOutcome)}
    assert started == reported == played
    beats = [r for r in executor.reports if isinstance(r, Heartbeat)]
    assert beats and beats[-1].in_flight.count == 0

    resumed = batch(llm_server, store, InProcess(), resume=True)
    assert {o.episode_id for o in resumed.outcomes} == lost
    assert not resumed.failed and len(store.completed_episode_ids("pub")) == 6


class LoopNoting(InProcess):
    """Runs each job in this process (as :class:`InProcess`) and notes the module of the
    event loop each episode started on."""

    def __init__(self) -> None:
        super().__init__()
        self.loops: set[str] = set()

    def __call__(
        self,
        jobs: Sequence[WorkerJob],
        take: Callable[[WorkerReport], None],
        store: EpisodeStore,
        *,
        judge: str | None,
    ) -> None:
        def noting(item: WorkerReport) -> None:
            if isinstance(item, Started):
                self.loops.add(type(asyncio.get_running_loop()).__module__)
            take(item)

        super().__call__(jobs, noting, store, judge=judge)


def test_a_worker_plays_on_uvloop_where_it_is_installed(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    pytest.importorskip("uvloop")  # a dependency wherever uvloop has wheels
    llm_server.rule = plays
    executor = LoopNoting()
    result = batch(llm_server, store, executor)

    assert not result.failed and len(store.completed_episode_ids("pub")) == 6
    assert executor.loops == {"uvloop"}


def private_imports(path: Path) -> list[str]:
    """The private names ``path`` imports from ``sotopia_are.studies`` (and its modules)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.name}:{node.lineno} {node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("sotopia_are.studies")
        for alias in node.names
        if alias.name.startswith("_")
    ]


def test_the_cluster_implements_the_protocol_without_private_names() -> None:
    files = sorted((PACKAGE / "cluster").glob("*.py"))
    assert files
    assert [found for path in files for found in private_imports(path)] == []
