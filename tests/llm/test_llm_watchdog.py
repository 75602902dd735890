"""The watchdog's one timer for many requests: each request is checked when it has waited
its own timeout, whenever it was sent, and a deadline ends a request however busy its
endpoint is."""

import asyncio
import time
from collections.abc import Callable

import pytest

from sotopia_are.llm.concurrency import AdaptiveLimit
from sotopia_are.llm.config import Endpoint
from sotopia_are.llm.http_errors import APIConnectionError, Timeout
from sotopia_are.llm.watchdog import Watchdog

PROVIDER = Endpoint(model="openai/m", api_base=None)  # no probe: silence means stuck


async def _wait(watchdog: Watchdog) -> tuple[float, Exception | None]:
    """Wait as a request does until the watch ends it: (seconds waited, why)."""
    watch = watchdog.watch(epoch=0)
    sent = time.monotonic()
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        assert watch.task.uncancel() == 0
        return time.monotonic() - sent, watch.ended
    finally:
        watch.stop()
    raise AssertionError("the request was never ended")


async def test_each_request_is_checked_after_its_own_timeout() -> None:
    watchdog = Watchdog(AdaptiveLimit(4), PROVIDER, timeout_s=0.2)
    first = asyncio.create_task(_wait(watchdog))
    await asyncio.sleep(0.1)
    second = asyncio.create_task(_wait(watchdog))
    for waited, ended in await asyncio.gather(first, second):
        assert 0.2 <= waited < 0.6
        assert isinstance(ended, Timeout) and ended.stuck is True


async def test_a_request_that_ends_in_time_is_not_checked() -> None:
    limit = AdaptiveLimit(4)
    watchdog = Watchdog(limit, PROVIDER, timeout_s=0.1)
    watch = watchdog.watch(epoch=0)
    watch.stop()
    late = asyncio.create_task(_wait(watchdog))
    waited, ended = await late  # the shared timer was set for the first: it still ends this
    assert 0.1 <= waited < 0.5 and isinstance(ended, Timeout)


async def _wait_while_others_are_answered(
    limit: AdaptiveLimit, sent_at: Callable[[], float | None], first_after_s: float = 0.0
) -> tuple[float, Exception | None, Timeout]:
    """:func:`_wait` for a request (timeout 0.1 s, deadline 0.35 s) while the endpoint
    answers others every 20 ms from ``first_after_s`` on, each sent at ``sent_at()``;
    also the deadline's error."""
    expired = Timeout("past the deadline")
    watchdog = Watchdog(limit, PROVIDER, timeout_s=0.1, deadline_s=0.35, expired=lambda: expired)

    async def answering_others() -> None:
        await asyncio.sleep(first_after_s)
        while True:
            limit.answered(sent_at())
            await asyncio.sleep(0.02)

    others = asyncio.create_task(answering_others())
    try:
        waited, ended = await _wait(watchdog)
    finally:
        others.cancel()
    return waited, ended, expired


async def test_a_deadline_ends_a_request_the_busy_endpoint_never_answers() -> None:
    limit = AdaptiveLimit(4)
    waited, ended, expired = await _wait_while_others_are_answered(limit, lambda: None)
    assert ended is expired and 0.35 <= waited < 0.8
    assert limit.limit == 2  # busy: lowered once for this request


def test_a_deadline_needs_its_error() -> None:
    async def make() -> None:
        Watchdog(AdaptiveLimit(1), PROVIDER, timeout_s=1, deadline_s=2)

    with pytest.raises(ValueError, match="needs the error"):
        asyncio.run(make())


@pytest.mark.parametrize("overtaken", [False, True])
async def test_a_request_the_endpoint_overtook_is_lost_past_its_timeout(overtaken: bool) -> None:
    # Answers to requests sent before it (a queue) keep it waiting until its deadline; an
    # answer to one sent after it ends it at its timeout, as a dropped connection.
    limit = AdaptiveLimit(4)
    earlier = time.monotonic() - 1.0
    waited, ended, expired = await _wait_while_others_are_answered(
        limit,
        time.monotonic if overtaken else lambda: earlier,
        first_after_s=0.02,  # sent after the watched request
    )
    if overtaken:
        assert isinstance(ended, APIConnectionError) and 0.1 <= waited < 0.3
        assert "answered requests sent after this one" in str(ended)
        assert limit.limit == 4  # lost, not overload: the limit stays
    else:
        assert ended is expired and 0.35 <= waited < 0.8
