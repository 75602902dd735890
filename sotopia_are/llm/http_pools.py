"""The HTTP transport's connection pools, one per event loop and server.

A server is reached through a :class:`~sotopia_are.llm.http_wire.WirePool` (this package's
own lean client), or through an aiohttp session when the environment names a proxy for it
(looked up once per server, here, not on every request). Keep-alive connections are
reused across requests of one loop; a loop's pools close with it (or by :func:`aclose`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from sotopia_are.llm.http_errors import InvalidURLError
from sotopia_are.llm.http_wire import WirePool, WireReply

if TYPE_CHECKING:
    import aiohttp

__all__ = ["POOLS", "USER_AGENT", "Pools", "Route", "aclose", "get_once"]

USER_AGENT = "sotopia-are"

Route = tuple["WirePool | aiohttp.ClientSession", str]
"""How a server is reached: its pool (the lean client's, or an aiohttp session through a
proxy) and its chat completions URL."""


class Pools:
    """One connection pool per event loop and server (see the module). A loop's pools are
    closed when the loop shuts down (``asyncio.run`` and ``asyncio.Runner`` finalise
    asynchronous generators then, and a generator held here closes them), or by
    :func:`aclose`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Route]] = (
            weakref.WeakKeyDictionary()
        )
        self._keepers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncIterator[None]] = (
            weakref.WeakKeyDictionary()
        )

    def route(self, api_base: str) -> Route:
        """The running loop's pool for ``api_base`` and the chat completions URL."""
        loop = asyncio.get_running_loop()
        routes = self._by_loop.get(loop)
        if routes is not None:
            found = routes.get(api_base)
            if found is not None and not found[0].closed:
                return found
        with self._lock:
            routes = self._by_loop.get(loop)
            if routes is None:
                routes = self._by_loop[loop] = {}
                self._keepers[loop] = self._keep(loop, routes)
            found = routes.get(api_base)
            if found is None or found[0].closed:
                url = _chat_url(api_base)
                proxy = _proxy_for(url)
                pool: WirePool | aiohttp.ClientSession = (
                    _new_session(proxy) if proxy else WirePool(url, user_agent=USER_AGENT)
                )
                found = routes[api_base] = (pool, url)
            return found

    def _keep(
        self,
        loop: asyncio.AbstractEventLoop,
        routes: dict[str, Route],
    ) -> AsyncIterator[None]:
        """Start a generator that closes ``routes`` when the loop finalises it."""

        async def keeper() -> AsyncIterator[None]:
            try:
                yield
            finally:
                await _close_all(routes)
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
        """Close the running loop's pools."""
        loop = asyncio.get_running_loop()
        with self._lock:
            routes = self._by_loop.pop(loop, None)
        if routes:
            await _close_all(routes)


async def _close_all(routes: dict[str, Route]) -> None:
    for pool, _url in list(routes.values()):
        if isinstance(pool, WirePool):
            pool.close()
        elif not pool.closed:
            await pool.close()
    routes.clear()


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


async def get_once(url: str, headers: dict[str, str], cap: int, timeout_s: float) -> WireReply:
    """``GET url`` on a connection of its own, closed after (a check before or beside a
    run, not one of its requests): through the environment's proxy for ``url`` when it
    names one, else by this package's client (no aiohttp to import for it).

    Raises ``TimeoutError`` after ``timeout_s``, ``ConnectionError`` (an ``OSError``) when
    the server cannot be reached or answers no HTTP, ``ValueError`` for a URL naming no
    host."""
    proxy = _proxy_for(url)
    if proxy:
        return await asyncio.wait_for(_get_through(proxy, url, headers, cap), timeout_s)
    pool = WirePool(url, user_agent=USER_AGENT)
    try:
        return await asyncio.wait_for(pool.get(headers, cap), timeout_s)
    finally:
        pool.close()


async def _get_through(proxy: str, url: str, headers: dict[str, str], cap: int) -> WireReply:
    import aiohttp

    try:
        async with (
            aiohttp.ClientSession(proxy=proxy) as client,
            client.get(url, headers=headers) as reply,
        ):
            body = await reply.content.read(cap + 1)
            answer_headers = {name.lower(): value for name, value in reply.headers.items()}
            status, reason = reply.status, reply.reason or ""
    except aiohttp.InvalidURL as error:
        raise ValueError(str(error)) from None
    except aiohttp.ClientError as error:
        raise ConnectionError(str(error) or type(error).__name__) from None
    return WireReply(status, reason, answer_headers, body if len(body) <= cap else None)
