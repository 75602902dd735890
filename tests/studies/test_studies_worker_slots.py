"""A batch's worker processes share a local server's decoding slots as they free up: a
worker whose own episodes are done leaves its slots to the others (before, each kept a
fixed part and the rest stood idle), the server never gets more requests than its slots,
and the slots a killed worker held come back to the others."""

import asyncio
import json
import multiprocessing
import os
import re
import signal
import threading
import time
from collections.abc import Mapping
from typing import Any

import sotopia_are as sa
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import EpisodeStore
from sotopia_are.studies.worker_slots import SlotPool, WorkerSlots
from sotopia_are.studies.workers import server_slots
from sotopia_are.testing import LocalLLMServer, ReplyLike

MODEL = "openai/test-model"
SPEAK = json.dumps({"action_type": "speak", "argument": "Two loaves, then?"})
DAY = re.compile(r"day (\d+)\.")
FORK = multiprocessing.get_context("fork")


def bakery_days(prefix: str, turns: list[int]) -> list[sa.EpisodeSpec]:
    """An episode a day, day ``n`` with ``turns[n]`` turns (each turn a model call)."""
    return [
        sa.EpisodeSpec(
            episode_id=f"{prefix}-{n}",
            scenario=f"A bakery before closing, day {n}.",
            agent_names=["Mara Quinn", "Teo Alvarez"],
            agent_backgrounds=["the baker", "a café owner"],
            agent_goals=["sell the bread", "buy it cheap"],
            max_turns=count,
            max_stale_turns=count,
        )
        for n, count in enumerate(turns)
    ]


def day_of(body: Mapping[str, Any]) -> int:
    text = " ".join(str(m.get("content", "")) for m in body["messages"])
    found = DAY.search(text)
    assert found is not None
    return int(found.group(1))


def test_a_worker_done_with_its_episodes_leaves_its_slot_to_the_other(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    # Worker 0 plays the even days (2 turns each), worker 1 the odd ones (16 turns each).
    arrivals: list[tuple[int, int]] = []  # (day, requests at the server with this one)

    def rule(body: Mapping[str, Any]) -> ReplyLike:
        arrivals.append((day_of(body), llm_server.in_flight))
        return SPEAK

    llm_server.rule, llm_server.slots, llm_server.latency = rule, 2, 0.03
    specs = bakery_days("free", [2, 16, 2, 16, 2, 16])
    config = sa.LLMConfig(api_base=llm_server.url)
    result = sa.batch(specs, MODEL, tag="free", store=store, config=config, workers=2)
    assert result.workers == 2 and not result.failed
    assert len(arrivals) == 3 * 2 + 3 * 16
    assert llm_server.max_in_flight == 2  # never more than the slots: nothing queued
    last_short = max(i for i, (day, _) in enumerate(arrivals) if day % 2 == 0)
    tail = [at_once for _, at_once in arrivals[last_short + 4 :]]
    # Only worker 1 has work left, and it uses both slots (with a fixed part: one only).
    assert len(tail) > 20 and tail.count(2) >= 5


def test_the_slots_a_killed_worker_held_come_back_to_the_others(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    killed_at: list[float] = []
    arrivals: list[tuple[float, int]] = []
    lock = threading.Lock()

    def rule(body: Mapping[str, Any]) -> ReplyLike:
        with lock:
            arrivals.append((time.monotonic(), llm_server.in_flight))
            if not killed_at and llm_server.in_flight == 2:
                # Both slots are held, by one worker or both: kill -9 one of them.
                os.kill(multiprocessing.active_children()[0].pid or 0, signal.SIGKILL)
                killed_at.append(time.monotonic())
        return SPEAK

    llm_server.rule, llm_server.slots, llm_server.latency = rule, 2, 0.05
    specs = bakery_days("kill", [12] * 6)
    config = sa.LLMConfig(api_base=llm_server.url)
    result = sa.batch(specs, MODEL, tag="kill", store=store, config=config, workers=2)
    assert killed_at
    died = [o for o in result.outcomes if "worker process died" in (o.reason or "")]
    assert len(died) == 3  # the killed worker's episodes, marked at once
    survived = [o for o in result.outcomes if o not in died]
    assert [o.status for o in survived] == [EpisodeStatus.COMPLETE] * 3
    # Its permits were given back: the survivor used both slots afterwards.
    later = [at_once for at, at_once in arrivals if at > killed_at[0] + 0.5]
    assert later and max(later) == 2


def test_a_server_that_says_no_slots_is_not_pooled(llm_server: LocalLLMServer) -> None:
    config = sa.LLMConfig(api_base=llm_server.url)
    assert server_slots(config, [MODEL]) == {}
    assert server_slots(sa.LLMConfig(), ["gpt-4o-mini"]) == {}  # a provider: nothing asked
    llm_server.slots = 3
    key = config.endpoint(MODEL).key
    root = llm_server.url.removesuffix("/v1")
    # The agents' and the judge's models on one server share its slots.
    judge_key = config.endpoint("openai/judge").key
    assert server_slots(config, [MODEL, "openai/judge"]) == {key: (root, 3), judge_key: (root, 3)}


def _hold_two(pool: SlotPool, holding: Any) -> None:
    async def hold() -> None:
        shared = WorkerSlots(pool, 0)
        await shared.acquire("a")
        await shared.acquire("b")  # the same server's other endpoint
        holding.set()
        await asyncio.sleep(60)

    asyncio.run(hold())


def test_reclaim_gives_back_what_a_killed_process_held() -> None:
    pool = SlotPool.create(FORK, {"a": ("srv", 2), "b": ("srv", 2), "c": ("other", 1)}, 2)
    holding = FORK.Event()
    process = FORK.Process(target=_hold_two, args=(pool, holding), daemon=True)
    process.start()
    assert holding.wait(10)
    os.kill(process.pid or 0, signal.SIGKILL)
    process.join()
    assert not pool.permits[1].acquire(block=False)  # "srv" (sorted after "other") is held
    assert pool.reclaim(0) == 2 and pool.reclaim(0) == 0

    async def take_all() -> None:
        shared = WorkerSlots(pool, 1)
        await asyncio.wait_for(asyncio.gather(shared.acquire("a"), shared.acquire("b")), 5)
        await shared.acquire("c")
        await shared.acquire("unknown")  # not the pool's: not bounded
        for endpoint in ("a", "b", "c"):
            await shared.release(endpoint)
        shared.close()

    asyncio.run(take_all())
    assert list(pool.held) == [0, 0, 0, 0]


async def test_waiters_are_served_in_line_and_a_cancelled_one_leaks_nothing() -> None:
    pool = SlotPool.create(FORK, {"a": ("srv", 1)}, 1)
    shared = WorkerSlots(pool, 0)
    order: list[str] = []

    async def use(name: str, hold_s: float) -> None:
        await shared.acquire("a")
        order.append(name)
        await asyncio.sleep(hold_s)
        await shared.release("a")

    first = asyncio.create_task(use("first", 0.2))
    await asyncio.sleep(0.01)
    cancelled = asyncio.create_task(use("cancelled", 0))
    second = asyncio.create_task(use("second", 0))
    await asyncio.sleep(0.05)
    cancelled.cancel()
    await asyncio.gather(first, second)
    assert order == ["first", "second"]
    assert pool.held[0] == 0
    assert pool.permits[0].acquire(block=False)  # the one permit is back in the pool
    pool.permits[0].release()
    shared.close()


def _take_and_release(pool: SlotPool, index: int, at_once: Any, most: Any) -> None:
    async def run() -> None:
        shared = WorkerSlots(pool, index)

        async def one() -> None:
            await shared.acquire("a")
            with at_once.get_lock():
                at_once.value += 1
                most.value = max(most.value, at_once.value)
            await asyncio.sleep(0.002)
            with at_once.get_lock():
                at_once.value -= 1
            await shared.release("a")

        await asyncio.gather(*(one() for _ in range(60)))
        shared.close()

    asyncio.run(run())


def test_processes_never_hold_more_than_the_slots_together() -> None:
    pool = SlotPool.create(FORK, {"a": ("srv", 3)}, 3)
    at_once, most = FORK.Value("i", 0), FORK.Value("i", 0)
    processes = [
        FORK.Process(target=_take_and_release, args=(pool, i, at_once, most)) for i in range(3)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(30)
        assert process.exitcode == 0
    assert most.value == 3 and at_once.value == 0
    assert list(pool.held) == [0, 0, 0]
