"""A batch on a real local Ray cluster — a head and a second node, separate ``ray start``
processes — with Debian's ``redis-server`` as the store and the stand-in LLM server:
the same episodes, ids and records as a local batch (through ``ray://``, the head's client
server), the endpoint limit held across the nodes, the driver's callbacks; a node or the
driver killed mid-batch loses nothing complete and a resume finishes the rest; a batch of
games (the stand-in playing legal moves) ends each game with its outcome verdict, the
outcome its log recomputes, as a local batch does.

Opt-in (about 2½ min on two shared cores, 15 s of it starting the cluster):
``SOTOPIA_ARE_RAY_TESTS=1 pytest tests/cluster/test_cluster_ray.py``.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_support import RayCluster, RedisServer, redis_server_binary, spec

import sotopia_are as sa
from sotopia_are.cluster import ray_batch
from sotopia_are.games import GameJudge, outcome_of
from sotopia_are.storage import EpisodeStore, connect
from sotopia_are.studies import benchmark
from sotopia_are.testing import LocalLLMServer, play_rule, schema_rule

pytestmark = pytest.mark.skipif(
    os.environ.get("SOTOPIA_ARE_RAY_TESTS") != "1",
    reason="starts a Ray cluster (~70 s): set SOTOPIA_ARE_RAY_TESTS=1",
)

MODEL = "openai/test-model"
GAMES = Path(__file__).parents[2] / "examples" / "games"


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    server = RedisServer(binary, tmp_path_factory.mktemp("redis"))
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    """A head and a second node, one CPU each; the second is ``cluster.nodes[1]``."""
    started = RayCluster(tmp_path_factory.mktemp("ray"))
    try:
        started.add_node()
        started.wait_for_cpus(2)
        yield started
    finally:
        started.stop()


@pytest.fixture
def store(redis_url: str) -> Iterator[EpisodeStore]:
    with connect(redis_url) as opened:
        opened.client.flushdb()
        yield opened


def test_a_cluster_batch_stores_what_a_local_batch_stores(
    cluster: RayCluster, store: EpisodeStore, llm_server: LocalLLMServer, storage_data_dir: str
) -> None:
    llm_server.rule, llm_server.latency = schema_rule, 0.05
    specs = [spec(f"e{n}") for n in range(6)]
    # Two requests at a time on the endpoint, for the whole cluster.
    config = sa.LLMConfig(api_base=llm_server.url, timeout_s=10, max_concurrency=2)
    plans: list[sa.BatchPlan] = []
    outcomes: list[sa.EpisodeOutcome] = []
    progress: list[sa.BatchProgress] = []
    result = ray_batch(  # through the head's client server, as from another machine
        specs, MODEL, address=cluster.client_address, tag="same", store=store, judge_model=MODEL,
        config=config, concurrency=8, on_plan=plans.append, on_outcome=outcomes.append,
        on_progress=progress.append,
    )  # fmt: skip
    assert result.workers == 2 and not result.failed  # one actor on each one-CPU node
    assert llm_server.max_in_flight == 2
    ids = {item.spec.episode_id for item in plans[0].planned}
    assert {o.episode_id for o in outcomes} == ids == store.completed_episode_ids("same")
    assert (progress[-1].done, progress[-1].failed, progress[-1].total) == (6, 0, 6)

    with connect() as local:  # the embedded store: the same batch, played locally
        here = sa.batch(specs, MODEL, tag="same", store=local, judge_model=MODEL, config=config)
        assert {o.episode_id for o in here.outcomes} == ids
        for episode_id in ids:
            there, mine = store.load(episode_id), local.load(episode_id)
            assert there.spec == mine.spec and there.status is mine.status
            assert there.actions() == mine.actions() and there.scores == mine.scores


def cli_batch(
    cluster: RayCluster, redis_url: str, llm: LocalLLMServer, specs: Path, *more: str
) -> subprocess.Popen[str]:
    """``sotopia-are batch`` as a separate driver process on the cluster."""
    return subprocess.Popen(
        [sys.executable, "-m", "sotopia_are", "batch", str(specs), "--model", MODEL,
         "--api-base", llm.url, "--redis-url", redis_url, "--cluster", cluster.address,
         "--tag", "k", "--no-evaluate", *more],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def wait_for_complete(store: EpisodeStore, count: int, timeout_s: float = 60) -> set[str]:
    deadline = time.monotonic() + timeout_s
    while len(done := store.completed_episode_ids("k")) < count:
        assert time.monotonic() < deadline, f"only {len(done)} episodes completed"
        time.sleep(0.1)
    return done


def test_a_node_killed_mid_batch_loses_nothing_complete_and_resume_finishes(
    cluster: RayCluster, store: EpisodeStore, redis_url: str, llm_server: LocalLLMServer,
    tmp_path: Path,
) -> None:  # fmt: skip
    llm_server.rule, llm_server.latency = schema_rule, 0.1
    specs = tmp_path / "specs.jsonl"
    specs.write_text("\n".join(spec(f"k{n}", 4).model_dump_json() for n in range(24)) + "\n")
    # One episode at a time on each node: chunks of CHUNK_WAVES episodes, six of them.
    driver = cli_batch(cluster, redis_url, llm_server, specs, "-c", "2")
    try:
        wait_for_complete(store, 2)
        cluster.kill(cluster.nodes[1])
        complete = {i: store.load(i) for i in store.completed_episode_ids("k")}
        output, _ = driver.communicate(timeout=120)
    finally:
        driver.kill()
    assert driver.returncode == 1, output
    assert "Ray worker was lost" in output
    statuses = {store.load(i).status for i in store.episode_ids(tag="k")}
    assert sa.EpisodeStatus.RUNNING not in statuses and sa.EpisodeStatus.INCOMPLETE in statuses
    # The lost node took its chunk along; the head played the chunks left.
    from sotopia_are.cluster.executor import CHUNK_WAVES  # it imports Ray

    assert len(store.completed_episode_ids("k")) >= 24 - CHUNK_WAVES

    cluster.wait_for_cpus(1)  # the head alone, as the resume finds it
    resumed = cli_batch(cluster, redis_url, llm_server, specs, "--resume")
    output, _ = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, output
    assert len(store.completed_episode_ids("k")) == 24
    # What was complete when the node died was skipped, not played again.
    assert all(store.load(i) == record for i, record in complete.items())
    # The module's other tests run on two nodes again.
    cluster.add_node()
    cluster.wait_for_cpus(2)


def test_a_driver_killed_mid_batch_loses_nothing_complete_and_resume_finishes(
    cluster: RayCluster, store: EpisodeStore, redis_url: str, llm_server: LocalLLMServer,
    tmp_path: Path,
) -> None:  # fmt: skip
    llm_server.rule, llm_server.latency = schema_rule, 0.1
    specs = tmp_path / "specs.jsonl"
    specs.write_text("\n".join(spec(f"d{n}", 8).model_dump_json() for n in range(6)) + "\n")
    driver = cli_batch(cluster, redis_url, llm_server, specs, "-c", "4")
    try:
        wait_for_complete(store, 1)
        driver.send_signal(signal.SIGKILL)  # Ray stops the dead driver's actors
    finally:
        driver.kill()
        driver.wait()
    complete = {i: store.load(i) for i in store.completed_episode_ids("k")}
    time.sleep(2)  # what it left running is idle from now on
    resumed = cli_batch(cluster, redis_url, llm_server, specs, "--resume", "--stale-after", "1")
    output, _ = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, output
    assert len(store.completed_episode_ids("k")) == 6
    assert all(store.load(i) == record for i, record in complete.items())


def test_a_benchmark_runs_on_the_cluster_and_reports_from_the_store(
    cluster: RayCluster, store: EpisodeStore, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = schema_rule
    done = benchmark(
        [spec("t0"), spec("t1")], ["openai/model-a"], "openai/partner", tag="bench",
        judge_model=MODEL, store=store, config=sa.LLMConfig(api_base=llm_server.url),
        run_batch=functools.partial(ray_batch, address=cluster.client_address),
    )  # fmt: skip
    # Two tasks, the model in each of the two roles: four episodes, rated on the cluster.
    assert not done.batch.failed and done.batch.workers == 2
    assert len(done.report.rows) == 4 == len(store.completed_episode_ids("bench"))
    (result,) = done.report.results
    assert result.model == "openai/model-a" and result.partner == "openai/partner"


def test_a_cluster_batch_of_games_ends_each_with_its_outcome_verdict_as_a_local_batch(
    cluster: RayCluster, store: EpisodeStore, llm_server: LocalLLMServer, storage_data_dir: str
) -> None:
    llm_server.rule = play_rule  # the offline stand-in: legal moves in every phase
    specs = [
        sa.GameSpec.model_validate_json((GAMES / f"{name}.json").read_text())
        for name in ("werewolf", "bargaining")
    ]
    config = sa.LLMConfig(api_base=llm_server.url, timeout_s=10)
    result = ray_batch(
        specs, MODEL, address=cluster.client_address, tag="games", repeat=3, store=store,
        config=config,
    )  # fmt: skip
    assert result.workers == 2 and not result.failed
    ids = {o.episode_id for o in result.outcomes}
    assert len(ids) == 6 and store.completed_episode_ids("games") == ids
    for episode_id in ids:
        record = store.load(episode_id)
        assert record.status is sa.EpisodeStatus.COMPLETE, record.reason
        assert record.spec.game is not None  # a game it stays, through the cluster
        # Its only verdict is the rules judge's, equal to the outcome the log recomputes.
        (verdict,) = record.verdicts
        assert verdict.key == GameJudge.verdict_key and verdict.rated
        outcome = outcome_of(record.spec, record.entries)
        assert verdict.termination_reason == outcome.reason == record.reason
        for row in outcome.players:
            rating = verdict.evaluation.rating(row.name)
            assert rating.scores() == {"won": float(row.won), "payoff": float(row.payoff)}
    assert {store.load(i).spec.name for i in ids} == {"werewolf", "bargaining"}

    with connect() as local:  # the embedded store: the same games, played locally
        here = sa.batch(specs, MODEL, tag="games", repeat=3, store=local, config=config)
        assert {o.episode_id for o in here.outcomes} == ids
        for episode_id in ids:
            there, mine = store.load(episode_id), local.load(episode_id)
            assert there.spec == mine.spec and there.entries == mine.entries
            assert there.verdicts[0].scores == mine.verdicts[0].scores
