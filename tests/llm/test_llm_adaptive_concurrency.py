"""Per-endpoint limits adapt to the server: they start low, double while latency stays flat,
shrink when latency grows with load (the server's own queue, or latency above its floor),
halve on a 429 (once per overload, not once per refused request) and when a request outlives
its timeout while the endpoint answers others; the ceilings are high for a server at an
api_base and lower for a provider's endpoint. Against a server with two decoding slots that
queues the rest (as llama.cpp does), requests wait instead of timing out. The lag of our
own event loop (a client short of CPU) is not read as the server's queue."""

import asyncio
import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sotopia_are.llm import (
    DEFAULT_HOSTED_CONCURRENCY,
    DEFAULT_INITIAL_CONCURRENCY,
    DEFAULT_LOCAL_CONCURRENCY,
    AdaptiveLimit,
    ConcurrencyRegistry,
    LLMConfig,
    LLMSession,
    RetryPolicy,
)
from sotopia_are.llm.concurrency import LoopLag
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"


def test_default_limits_are_high_at_an_api_base_and_lower_at_a_provider() -> None:
    config = LLMConfig()
    assert config.max_concurrency is None
    assert config.concurrency_for(config.endpoint("openai/x", api_base="http://h/v1")) == 128
    assert config.concurrency_for(config.endpoint("gpt-4o-mini")) == 16
    assert (DEFAULT_LOCAL_CONCURRENCY, DEFAULT_HOSTED_CONCURRENCY) == (128, 16)
    fixed = LLMConfig(max_concurrency=5)
    assert fixed.concurrency_for(fixed.endpoint("gpt-4o-mini")) == 5


async def test_a_throttle_halves_once_per_epoch_and_successes_raise_it_back() -> None:
    limit = AdaptiveLimit(8)
    epochs = [await limit.acquire() for _ in range(8)]
    assert limit.locked() and limit.held == 8
    # The overload answers all eight requests with 429s: one halving, not eight.
    for epoch in epochs:
        limit.release(epoch, throttled=True)
    assert limit.limit == 4 and limit.held == 0
    # Four successes in a row raise it to 5, five more to 6, and so on up to the ceiling.
    rounds = []
    while limit.limit < limit.ceiling:
        epoch = await limit.acquire()
        limit.release(epoch, ok=True)
        rounds.append(limit.limit)
    assert len(rounds) == 4 + 5 + 6 + 7 and rounds[:4] == [4, 4, 4, 5] and limit.limit == 8
    epoch = await limit.acquire()
    limit.release(epoch, ok=True)
    assert limit.limit == 8  # never above the ceiling


async def test_a_lowered_limit_holds_new_requests_until_enough_finish() -> None:
    limit = AdaptiveLimit(4)
    held = [await limit.acquire() for _ in range(4)]
    limit.release(held.pop(), throttled=True)  # limit 2, three still held
    waiter = asyncio.create_task(limit.acquire())
    await asyncio.sleep(0)
    limit.release(held.pop())  # two held: still at the limit
    await asyncio.sleep(0)
    assert not waiter.done()
    limit.release(held.pop())  # one held: the waiter gets its slot
    await asyncio.sleep(0)
    assert waiter.done() and limit.held == 2


async def test_a_cancelled_waiter_gives_up_its_place() -> None:
    limit = AdaptiveLimit(1)
    first = await limit.acquire()
    waiter = asyncio.create_task(limit.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    limit.release(first)
    assert limit.held == 0 and not limit.locked()


async def test_a_waiter_cancelled_while_a_slot_is_freed_leaves_quietly() -> None:
    # Cancelled, then a release pops its (cancelled) future before the task resumes: the
    # waiter must raise CancelledError, not fail looking for itself among the waiters.
    limit = AdaptiveLimit(1)
    first = await limit.acquire()
    waiter = asyncio.create_task(limit.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    limit.release(first)
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert limit.held == 0 and not limit.locked()


async def test_the_registry_keeps_one_limit_per_endpoint() -> None:
    registry = ConcurrencyRegistry()
    assert registry.limit("m@x", 3) is registry.limit("m@x", 3)
    with pytest.raises(ValueError, match="already has a concurrency limit of 3"):
        registry.limit("m@x", 4)


async def test_a_burst_of_429s_backs_off_then_recovers(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.latency = 0.02
    throttling = True

    def rule(_body: Any) -> Any:
        return Reply.rate_limited(0.05) if throttling else "fine"

    llm_server.rule = rule
    registry = ConcurrencyRegistry()
    retry = RetryPolicy(max_attempts=20, initial_backoff_s=0.01, max_backoff_s=0.02)
    session = make_session(
        {"concurrency": registry}, max_concurrency=8, initial_concurrency=8, retry=retry
    )

    async def call(n: int) -> str:
        return (await session.generate(MODEL, "test/plain.j2", {"word": str(n)})).value

    calls = [asyncio.create_task(call(n)) for n in range(8)]
    limit = registry.limit(f"{MODEL}@{llm_server.url}", 8)
    for _ in range(100):
        if limit.limit < 8:
            break
        await asyncio.sleep(0.05)
    assert limit.limit <= 4  # the 429s lowered it
    await asyncio.sleep(0.2)  # the requests sent before it was lowered are answered
    throttling = False
    llm_server.reset_stats()
    assert await asyncio.gather(*calls) == ["fine"] * 8
    assert llm_server.max_in_flight <= 4  # the lowered limit held
    # Successes bring it back: 4 + 5 + 6 + 7 requests from 4 to 8.
    more = [call(n) for n in range(40)]
    await asyncio.gather(*more)
    assert limit.limit == 8


async def rounds(
    limit: AdaptiveLimit,
    count: int,
    latency_s: float,
    service_s: float | None,
    lag_s: float = 0.0,
) -> None:
    """``count`` rounds of answers (as many as the limit each), all alike."""
    for _ in range(count):
        for _ in range(limit.limit):
            epoch = await limit.acquire()
            limit.release(epoch, ok=True, latency_s=latency_s, service_s=service_s, lag_s=lag_s)


async def test_it_starts_low_and_doubles_while_the_server_does_not_queue() -> None:
    assert LLMConfig().initial_concurrency == DEFAULT_INITIAL_CONCURRENCY == 4
    limit = AdaptiveLimit(128, initial=4)
    seen = [limit.limit]
    for _ in range(6):
        await rounds(limit, 1, latency_s=1.0, service_s=0.95)  # no queueing at the server
        seen.append(limit.limit)
    assert seen == [4, 8, 16, 32, 64, 128, 128]


async def test_the_servers_own_queue_time_shrinks_it_and_a_short_queue_lets_it_grow() -> None:
    limit = AdaptiveLimit(128, initial=16)
    await rounds(limit, 1, latency_s=3.0, service_s=1.0)  # waited twice as long as it ran
    assert limit.limit == 12
    await rounds(limit, 3, latency_s=3.0, service_s=1.0)
    assert limit.limit == 4  # 12 -> 9 -> 6 -> 4
    await rounds(limit, 5, latency_s=1.75, service_s=1.0)  # queue time between the bounds
    held = limit.limit
    await rounds(limit, 3, latency_s=1.75, service_s=1.0)
    assert limit.limit == held  # neither grows nor shrinks
    await rounds(limit, 4, latency_s=1.0, service_s=1.0)
    # Grows again, by one a round (no doubling after the first sign of load).
    assert held + 2 <= limit.limit <= held + 4


async def test_without_service_times_latency_above_its_floor_shrinks_it() -> None:
    limit = AdaptiveLimit(64, initial=8)
    await rounds(limit, 2, latency_s=0.05, service_s=None)
    assert limit.limit == 32  # flat: doubled twice
    await rounds(limit, 2, latency_s=0.4, service_s=None)  # 8x the floor
    assert limit.limit < 32


async def test_latency_that_is_our_own_loops_lag_does_not_shrink_it() -> None:
    limit = AdaptiveLimit(64, initial=8)
    await rounds(limit, 2, latency_s=0.05, service_s=None)
    assert limit.limit == 32
    # 8x the floor, all of it but the floor our loop running late: the server is as fast.
    await rounds(limit, 4, latency_s=0.4, service_s=None, lag_s=0.35)
    assert limit.limit == 64
    # The lag explains an answer down to the floor, never below it: a lag as long as the
    # whole answer does not drag the floor down to nothing...
    await rounds(limit, 4, latency_s=0.4, service_s=None, lag_s=0.4)
    # ...so latency back at the old floor once our loop is idle again reads as unloaded.
    await rounds(limit, 2, latency_s=0.05, service_s=None)
    assert limit.limit == 64
    # A server that answers 8x slower on its own still shrinks it, lag or not.
    await rounds(limit, 2, latency_s=0.45, service_s=None, lag_s=0.05)
    assert limit.limit < 64


async def test_loop_lag_measures_a_blocked_loop_and_only_while_requests_are_out() -> None:
    lag = LoopLag()
    mark = lag.start()
    await asyncio.sleep(0.1)  # an idle loop: its ticks run on time
    idle = lag.stop(mark)
    assert 0.0 <= idle < 0.05
    mark = lag.start()
    began = time.monotonic()
    time.sleep(0.3)  # a callback that holds the loop (CPU-bound work does the same)
    await asyncio.sleep(0.05)
    blocked = lag.stop(mark)
    # All of the stall but the part before the pending tick fell due (one tick at most).
    assert 0.3 - 0.03 <= blocked <= time.monotonic() - began
    await asyncio.sleep(0.05)  # nothing out: the tick stops re-arming itself
    assert lag._due is None


@contextlib.contextmanager
def watching(limit: AdaptiveLimit, seen: list[int]) -> Iterator[None]:
    """Note ``limit``'s limit in ``seen`` every 10 ms of the block (and at its end)."""

    async def watch() -> None:
        while True:
            seen.append(limit.limit)
            await asyncio.sleep(0.01)

    task = asyncio.create_task(watch())
    try:
        yield
    finally:
        task.cancel()
        seen.append(limit.limit)


def queueing_rule(service_s: float, slots: int) -> Callable[[Any], Reply]:
    """A server that works on ``slots`` requests at once and queues the rest, without
    saying how long it worked (no ``timings``): only its latency grows with load."""
    free = [0.0] * slots
    lock = threading.Lock()

    def rule(_request: Any) -> Reply:
        with lock:
            now = time.monotonic()
            slot = min(range(slots), key=free.__getitem__)
            free[slot] = max(now, free[slot]) + service_s
            return Reply.text("fine", delay=free[slot] - now)

    return rule


async def test_an_untimed_server_that_queues_still_shrinks_it(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.rule = queueing_rule(0.02, slots=1)
    registry = ConcurrencyRegistry()
    session = make_session({"concurrency": registry}, max_concurrency=32, initial_concurrency=2)
    limit = registry.limit(f"{MODEL}@{llm_server.url}", 32, initial=2)
    for n in range(10):  # one at a time first: the floor is the server's own 20 ms
        await session.generate(MODEL, "test/plain.j2", {"word": str(n)})
    seen: list[int] = []
    calls = [session.generate(MODEL, "test/plain.j2", {"word": str(n)}) for n in range(200)]
    with watching(limit, seen):
        assert {r.value for r in await asyncio.gather(*calls)} == {"fine"}
    # Slow start doubles the limit until answers wait several times the floor in the
    # server's queue (8 in flight wait 8 x 20 ms): that is overload, and it comes down.
    assert any(later < earlier for earlier, later in itertools.pairwise(seen))


async def test_a_client_whose_loop_lags_keeps_its_limit_against_a_fast_server(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.latency = 0.02  # answers in 20 ms, however many are in flight
    llm_server.rule = lambda _request: "fine"
    registry = ConcurrencyRegistry()
    session = make_session({"concurrency": registry}, max_concurrency=16, initial_concurrency=16)
    limit = registry.limit(f"{MODEL}@{llm_server.url}", 16)

    async def caller(until: float) -> None:
        while time.monotonic() < until:
            await session.generate(MODEL, "test/plain.j2", {"word": "x"})

    # Quiet first: the floor is the server's 20 ms.
    await asyncio.gather(*(caller(time.monotonic() + 0.5) for _ in range(16)))
    assert limit.limit == 16

    async def hog(until: float) -> None:
        # The client short of CPU: the loop held 200 ms at a time, let go for 5 ms.
        while time.monotonic() < until:
            time.sleep(0.2)
            await asyncio.sleep(0.005)

    before = len(llm_server.chat_requests)
    until = time.monotonic() + 3.0
    seen: list[int] = []
    with watching(limit, seen):
        await asyncio.gather(hog(until), *(caller(until) for _ in range(16)))
    # Answers read 10x later than the server gave them, for enough rounds to react
    # (16 answers a round), but the server never queued: the limit stays where it was.
    assert len(llm_server.chat_requests) - before >= 5 * 16
    assert set(seen) == {16}


def slot_server_session(
    make_session: Callable[..., LLMSession], registry: ConcurrencyRegistry, **config: Any
) -> LLMSession:
    return make_session({"concurrency": registry}, **config)


async def test_a_two_slot_server_that_queues_is_waited_for_and_the_limit_comes_down(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    # Like llama.cpp with --parallel 2: two requests at once, 0.2 s each, the rest queued.
    llm_server.slots, llm_server.latency = 2, 0.2
    llm_server.rule = lambda _request: "fine"
    registry = ConcurrencyRegistry()
    session = make_session(
        {"concurrency": registry}, timeout_s=0.5, initial_concurrency=16, max_concurrency=16
    )
    results = await asyncio.gather(
        *(session.generate(MODEL, "test/plain.j2", {"word": str(n)}) for n in range(24))
    )
    # 16 sent at once would wait up to 1.6 s on two slots, past the 0.5 s timeout: the
    # endpoint was answering others, so they kept their place and none was sent again.
    assert [r.value for r in results] == ["fine"] * 24
    assert all(len(r.call.attempts) == 1 for r in results)
    assert len(llm_server.chat_requests) == 24
    limit = registry.limit(f"{MODEL}@{llm_server.url}", 16)
    assert limit.limit <= 8
    # Each answer says where its time went: our queue, the server's work, the rest.
    for result in results:
        attempt = result.call.attempts[0]
        assert attempt.service_s is not None and 0.15 <= attempt.service_s <= attempt.latency_s
        assert attempt.queued_s >= 0.0
    assert max(r.call.attempts[0].queued_s for r in results) > 0.1  # the lowered limit held


async def test_a_run_against_a_slot_server_settles_near_its_slots(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.slots, llm_server.latency = 2, 0.1
    llm_server.rule = lambda _request: "fine"
    registry = ConcurrencyRegistry()
    session = make_session({"concurrency": registry}, timeout_s=5.0)
    calls = [session.generate(MODEL, "test/plain.j2", {"word": str(n)}) for n in range(100)]
    await asyncio.gather(*calls)
    limit = registry.limit(f"{MODEL}@{llm_server.url}", DEFAULT_LOCAL_CONCURRENCY)
    # Not the ceiling of 128: the server has two slots. (On a loaded machine our own
    # event loop's lag adds to the latency of these short answers, so it may go lower.)
    assert 1 <= limit.limit <= 6
    assert llm_server.max_in_flight <= 8


async def test_a_slow_answer_is_waited_for_while_the_server_answers_a_probe(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    # One request, 1 s of work, a 0.3 s timeout, nothing else answered meanwhile: only the
    # server's answer to GET /models tells it is busy, not stuck.
    llm_server.slots, llm_server.latency = 1, 1.0
    llm_server.rule = lambda _request: "fine"
    session = make_session({"concurrency": ConcurrencyRegistry()}, timeout_s=0.3)
    result = await session.generate(MODEL, "test/plain.j2", {"word": "x"})
    assert result.value == "fine" and len(result.call.attempts) == 1
    assert result.call.attempts[0].latency_s >= 1.0
    probes = [r for r in llm_server.requests if r.method == "GET" and r.path.endswith("/models")]
    assert probes  # it was asked, and its answer kept the request waiting
