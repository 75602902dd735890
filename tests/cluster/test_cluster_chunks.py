"""How a cluster batch deals its episodes out: in the plan's order, each once, in chunks
of a few waves of a worker's concurrency, and never fewer chunks than actors."""

from __future__ import annotations

import pytest
from cluster_support import spec

from sotopia_are.llm import LLMConfig
from sotopia_are.studies.batch import BatchEpisode
from sotopia_are.studies.worker_protocol import WorkerJob

executor = pytest.importorskip("sotopia_are.cluster.executor", reason="needs Ray")


def jobs(episodes: int, workers: int, concurrency: int) -> list[WorkerJob]:
    """As the batch splits them: each worker every ``workers``-th pending episode."""
    planned = [BatchEpisode(spec(f"e{n}"), f"e{n}", {}) for n in range(episodes)]
    return [
        WorkerJob(
            episodes=tuple(planned[i::workers]),
            tag="t",
            store_url="redis://nodes-reach-it",
            concurrency=concurrency,
            judge_model=None,
            rubric="sotopia_eval",
            config=LLMConfig(),
        )
        for i in range(workers)
    ]


def ids(chunk: WorkerJob) -> list[str]:
    return [item.spec.episode_id for item in chunk.episodes]


def test_chunks_keep_the_plans_order_and_every_episode_once() -> None:
    chunks = executor.chunks(jobs(100, 2, 3))
    assert [i for chunk in chunks for i in ids(chunk)] == [f"e{n}" for n in range(100)]
    assert {len(chunk.episodes) for chunk in chunks[:-1]} == {3 * executor.CHUNK_WAVES}
    assert all(chunk.concurrency == 3 and chunk.tag == "t" for chunk in chunks)


def test_a_small_batch_still_gives_every_actor_a_chunk() -> None:
    assert [ids(chunk) for chunk in executor.chunks(jobs(6, 2, 4))] == [
        ["e0", "e1", "e2"],
        ["e3", "e4", "e5"],
    ]
