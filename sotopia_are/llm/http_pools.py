"""The HTTP transport's connection pools: one aiohttp session per event loop and server.

Keep-alive connections are reused across requests of one loop; a loop's sessions close
with it (or by :func:`aclose`). The proxy is looked up once per server, here, not on
every request.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from sotopia_are.llm.http_errors import InvalidURLError

if TYPE_CHECKING:
    import aiohttp

__all__ = ["POOLS", "Pools", "aclose"]


class Pools:
    """One aiohttp client session (a keep-alive connection pool) per event loop and
    server. A loop's sessions are closed when the loop shuts down (``asyncio.run`` and
    ``asyncio.Runner`` finalise asynchronous generators then, and a generator held here
    closes them), or by :func:`aclose`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, tuple[aiohttp.ClientSession, str]]
        ] = weakref.WeakKeyDictionary()
        self._keepers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncIterator[None]] = (
            weakref.WeakKeyDictionary()
        )

    def session(self, api_base: str) -> tuple[aiohttp.ClientSession, str]:
        """The running loop's session for ``api_base`` and the chat completions URL."""
        loop = asyncio.get_running_loop()
        sessions = self._by_loop.get(loop)
        if sessions is not None:
            found = sessions.get(api_base)
            if found is not None and not found[0].closed:
                return found
        with self._lock:
            sessions = self._by_loop.get(loop)
            if sessions is None:
                sessions = self._by_loop[loop] = {}
                self._keepers[loop] = self._keep(loop, sessions)
            found = sessions.get(api_base)
            if found is None or found[0].closed:
                url = _chat_url(api_base)
                found = sessions[api_base] = (_new_session(_proxy_for(url)), url)
            return found

    def _keep(
        self,
        loop: asyncio.AbstractEventLoop,
        sessions: dict[str, tuple[aiohttp.ClientSession, str]],
    ) -> AsyncIterator[None]:
        """Start a generator that closes ``sessions`` when the loop finalises it."""

        async def keeper() -> AsyncIterator[None]:
            try:
                yield
            finally:
                await _close_all(sessions)
                with self._lock:
                    self._by_loop.pop(loop, None)
                    self._keepers.pop(loop, None)

        generator = keeper()
        # Its first step registers it with the running loop (the loop's asyncgen hook) and
        # stops at the yield without suspending.
        step = generator.__anext__()
        with contextlib.suppress(StopIteration):
            step.send(None)  # type: ignore[attr-defined]
        return generator

    async def aclose(self) -> None:
        """Close the running loop's sessions."""
        loop = asyncio.get_running_loop()
        with self._lock:
            sessions = self._by_loop.pop(loop, None)
        if sessions:
            await _close_all(sessions)


async def _close_all(sessions: dict[str, tuple[aiohttp.ClientSession, str]]) -> None:
    for session, _url in list(sessions.values()):
        if not session.closed:
            await session.close()
    sessions.clear()


def _new_session(proxy: str | None) -> aiohttp.ClientSession:
    import aiohttp

    connector = aiohttp.TCPConnector(
        limit=0,  # LLMSession's per-endpoint limit bounds requests in flight
        # Below the 5 s idle timeout of uvicorn (vLLM, SGLang): a connection the server
        # is about to close is not reused.
        keepalive_timeout=4.0,
    )
    # The proxy is looked up once per server here: aiohttp's trust_env looks it (and
    # ~/.netrc) up again on every request, in a thread pool, which doubled its CPU.
    # Bodies are inflated by _read_capped, a bounded step at a time.
    return aiohttp.ClientSession(connector=connector, proxy=proxy, auto_decompress=False)


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTP(S)_PROXY`` unless ``NO_PROXY``
    covers its host), as litellm's client would use; None for none."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


def _chat_url(api_base: str) -> str:
    if not api_base.lower().startswith(("http://", "https://")):
        raise InvalidURLError(f"api_base {api_base!r} is not an http(s) URL")
    return api_base.rstrip("/") + "/chat/completions"


POOLS = Pools()


async def aclose() -> None:
    """Close the HTTP transport's connections on the running event loop (they are closed
    anyway when the loop shuts down under ``asyncio.run``)."""
    await POOLS.aclose()
