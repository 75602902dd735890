"""The study verbs' event loop: uvloop where it is installed (a dependency off Windows),
asyncio's own when ``SOTOPIA_ARE_EVENT_LOOP=asyncio`` asks for it; a coroutine runs to
its end either way, as under ``asyncio.run``."""

import asyncio

import pytest
import uvloop

from sotopia_are.studies.event_loop import EVENT_LOOP_ENV, run_async


async def loop_and_cleanup() -> tuple[type[asyncio.AbstractEventLoop], list[str]]:
    """The running loop's type; and a task left running, which the runner cancels."""
    seen: list[str] = []

    async def left_running() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    asyncio.get_running_loop().create_task(left_running())
    await asyncio.sleep(0)
    return type(asyncio.get_running_loop()), seen


def test_uvloop_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EVENT_LOOP_ENV, raising=False)
    loop_type, seen = run_async(loop_and_cleanup())
    assert issubclass(loop_type, uvloop.Loop)
    assert seen == ["cancelled"]  # what was left running is cancelled at the end


def test_asyncio_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EVENT_LOOP_ENV, " AsyncIO ")
    loop_type, seen = run_async(loop_and_cleanup())
    assert not issubclass(loop_type, uvloop.Loop)
    assert seen == ["cancelled"]


def test_an_unknown_loop_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EVENT_LOOP_ENV, "trio")

    async def nothing() -> None:
        return None

    coroutine = nothing()
    with pytest.raises(ValueError, match="SOTOPIA_ARE_EVENT_LOOP must be 'uvloop' or 'asyncio'"):
        run_async(coroutine)
    coroutine.close()


async def test_it_cannot_run_inside_a_running_loop() -> None:
    async def nothing() -> None:
        return None

    coroutine = nothing()
    with pytest.raises(RuntimeError, match="running event loop"):
        run_async(coroutine)
    coroutine.close()
