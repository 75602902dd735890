"""A local server's decoding slots stay busy and its queue stays empty: once the server says
how many requests it decodes at once (llama.cpp's ``GET /props`` ``total_slots``), the
endpoint's limit is exactly that many — this process's part of them when several processes
send to it, as a batch's workers do — neither latency nor requests outliving their timeout
bring it below (only a 429/503 does) and flat latency does not raise it above (more would
only wait in the server's queue); and a round of answers judges only the limit it was sent
under, so one queue does not shrink the limit twice."""

import asyncio
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.llm import AdaptiveLimit, ConcurrencyRegistry, LLMSession
from sotopia_are.llm.concurrency import part_of_slots
from sotopia_are.llm.server_slots import server_root, total_slots
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"


async def test_answers_to_requests_sent_under_an_older_limit_do_not_shrink_it_again() -> None:
    limit = AdaptiveLimit(128, initial=4)
    a, b, c, d = [await limit.acquire() for _ in range(4)]
    for epoch in (a, b, c):  # each waited twice as long in the server's queue as it ran
        limit.release(epoch, ok=True, latency_s=3.0, service_s=1.0)
    e = await limit.acquire()  # sent before the round ends, under the same limit
    limit.release(d, ok=True, latency_s=3.0, service_s=1.0)
    assert limit.limit == 3  # the round: shrunk once
    f, g = await limit.acquire(), await limit.acquire()
    # E waited in the queue the shrink already cut; F, G and H, sent under the new
    # limit, waited for nothing: the new limit is fine, and it grows by one.
    limit.release(e, ok=True, latency_s=3.0, service_s=1.0)
    limit.release(f, ok=True, latency_s=1.0, service_s=1.0)
    h = await limit.acquire()
    limit.release(g, ok=True, latency_s=1.0, service_s=1.0)
    limit.release(h, ok=True, latency_s=1.0, service_s=1.0)
    assert limit.limit == 4
    # The watchdog still waits on E's latency: the slowest recent answer is kept.
    assert limit.slowest_recent_s == 3.0


async def test_the_servers_slots_raise_a_lower_limit_and_bound_its_shrinking() -> None:
    limit = AdaptiveLimit(128, initial=2)
    limit.serve_at_once(4)
    assert (limit.slots, limit.limit) == (4, 4)
    for _ in range(6):  # every answer queued five times as long as it ran
        for epoch in [await limit.acquire() for _ in range(limit.limit)]:
            limit.release(epoch, ok=True, latency_s=6.0, service_s=1.0)
    assert limit.limit == 4
    limit.overloaded(limit.epoch)  # a request outlived its timeout
    assert limit.limit == 4
    limit.release(await limit.acquire(), throttled=True)  # the server refuses: it decides
    assert limit.limit == 2
    small = AdaptiveLimit(3, initial=1)
    small.serve_at_once(8)
    assert small.limit == 3  # never above the ceiling


async def test_flat_latency_does_not_send_more_than_the_slots() -> None:
    limit = AdaptiveLimit(128, initial=16)
    limit.serve_at_once(4)
    assert limit.limit == 4  # lowered at once: the other twelve would wait in its queue
    for _ in range(10):  # every answer as fast as the first
        for epoch in [await limit.acquire() for _ in range(limit.limit)]:
            limit.release(epoch, ok=True, latency_s=1.0, service_s=1.0)
    assert limit.limit == 4


async def test_a_process_keeps_its_part_of_the_slots() -> None:
    parts = [AdaptiveLimit(128, initial=1, part=(i, 3)) for i in range(3)]
    for limit in parts:
        limit.serve_at_once(8)
    assert [limit.limit for limit in parts] == [3, 3, 2]
    with pytest.raises(ValueError, match="part"):
        AdaptiveLimit(8, part=(2, 2))


@given(slots=st.integers(min_value=1, max_value=512), parts=st.integers(min_value=1, max_value=64))
def test_the_parts_of_the_slots_add_up_to_them(slots: int, parts: int) -> None:
    shares = [part_of_slots(slots, i, parts) for i in range(parts)]
    assert min(shares) >= 1 and max(shares) - min(shares) <= 1
    assert sum(shares) == max(slots, parts)  # one each when there are more processes


@st.composite
def events(draw: st.DrawFn) -> list[tuple[str, float, float | None]]:
    kind = st.sampled_from(["answer", "answer", "answer", "overloaded", "untimed"])
    latency = st.floats(min_value=0.01, max_value=100.0)
    service = st.floats(min_value=0.01, max_value=10.0)
    return draw(st.lists(st.tuples(kind, latency, service), max_size=80))


@given(
    slots=st.integers(min_value=1, max_value=8),
    initial=st.integers(min_value=1, max_value=16),
    ceiling=st.integers(min_value=1, max_value=32),
    part=st.integers(min_value=1, max_value=4).flatmap(
        lambda n: st.tuples(st.integers(min_value=0, max_value=n - 1), st.just(n))
    ),
    happenings=events(),
)
def test_latency_and_timeouts_neither_lower_nor_raise_the_limit_from_the_slots(
    slots: int,
    initial: int,
    ceiling: int,
    part: tuple[int, int],
    happenings: list[tuple[str, float, float | None]],
) -> None:
    async def play() -> None:
        limit = AdaptiveLimit(ceiling, initial=initial, part=part)
        limit.serve_at_once(slots)
        fixed = min(part_of_slots(slots, *part), ceiling)
        for kind, latency_s, service_s in happenings:
            epoch = await limit.acquire()
            if kind == "overloaded":
                limit.overloaded(epoch)
                limit.release(epoch)
            else:
                timed = service_s if kind == "answer" else None
                limit.release(epoch, ok=True, latency_s=latency_s, service_s=timed)
            assert limit.limit == fixed

    asyncio.run(play())


def test_server_root_drops_the_v1() -> None:
    assert server_root("http://127.0.0.1:8089/v1") == "http://127.0.0.1:8089"
    assert server_root("http://127.0.0.1:8089/v1/") == "http://127.0.0.1:8089"
    assert server_root("http://h:1/api") == "http://h:1/api"


async def test_total_slots_is_what_a_llama_cpp_like_server_says(
    llm_server: LocalLLMServer,
) -> None:
    assert await total_slots(llm_server.base_url) is None  # no slots: no /props
    llm_server.slots = 3
    assert await total_slots(llm_server.base_url) == 3
    assert await total_slots("http://127.0.0.1:9") is None  # nothing listening


async def test_requests_outliving_their_timeout_on_busy_slots_keep_both_slots_busy(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    # Like llama.cpp --parallel 2 on a CPU: each answer takes longer than the timeout
    # while both slots work. The endpoint answers (it is busy, not stuck), so nothing
    # times out; and the limit stays at the two slots instead of halving to one.
    llm_server.slots, llm_server.latency = 2, 0.3
    llm_server.rule = lambda _request: "fine"
    registry = ConcurrencyRegistry()
    session = make_session(
        {"concurrency": registry}, timeout_s=0.1, initial_concurrency=2, max_concurrency=8
    )
    await session.generate(MODEL, "test/plain.j2", {"word": "first"})
    limit = registry.limit(f"{MODEL}@{llm_server.url}", 8)
    assert limit.slots == 2  # asked with the first request
    seen: list[int] = []
    done = asyncio.Event()

    async def watch() -> None:
        while not done.is_set():
            seen.append(limit.limit)
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(watch())
    results = await asyncio.gather(
        *(session.generate(MODEL, "test/plain.j2", {"word": str(n)}) for n in range(8))
    )
    done.set()
    await watcher
    assert [r.value for r in results] == ["fine"] * 8
    assert all(len(r.call.attempts) == 1 for r in results)  # no timeout, nothing sent again
    assert seen and min(seen) >= 2


async def test_a_long_answer_overtaken_by_short_ones_on_parallel_slots_is_waited_for(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    # Like a judgement decoded beside agents' turns on llama.cpp --parallel 2: the short
    # answers sent after the long one come first. On a server answering in order that
    # would mean the long one was lost; here it is still decoding, and is waited for.
    llm_server.slots, llm_server.latency = 2, 0.05
    llm_server.rule = lambda _request: "fine"
    session = make_session({"concurrency": ConcurrencyRegistry()}, timeout_s=0.1)
    await session.generate(MODEL, "test/plain.j2", {"word": "first"})  # learns the slots
    llm_server.enqueue(Reply.text("long", delay=1.5))
    long = asyncio.create_task(session.generate(MODEL, "test/plain.j2", {"word": "long"}))
    await asyncio.sleep(0.05)
    for n in range(10):
        await session.generate(MODEL, "test/plain.j2", {"word": str(n)})
    result = await long
    assert result.value == "long"
    assert len(result.call.attempts) == 1  # not failed as lost and sent again
    assert len(llm_server.chat_requests) == 12
