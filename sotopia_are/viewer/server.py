"""The viewer as a local web server — an ASGI app served by uvicorn — read-only over an
episode store, and as one static file.

Routes: ``/`` the episode list (filters in the query string, see :class:`EpisodeFilter`),
``/episode/<id>`` one episode, ``/tag/<tag>`` one batch's summary. Every page is built
from the store when it is asked for, so a running batch shows up as it goes.

uvicorn serves it because the standard library's server, with its listen backlog of 5 and a
thread per connection, left 73 of 200 concurrent requests unanswered in a minute. Pages are
built on a thread pool (the store's client is synchronous), so the event loop keeps
accepting connections while they are.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from http import HTTPStatus
from typing import Any

from sotopia_are.record import EpisodeSummary
from sotopia_are.storage import EpisodeStore, RecordNotFoundError, StorageError

from .filters import EpisodeFilter
from .pages import (
    content_security_policy,
    render_episode,
    render_index,
    render_message,
    render_static,
    render_tag,
)

__all__ = ["ViewerApp", "ViewerServer", "serve", "static_page"]

_log = logging.getLogger(__name__)

_BACKLOG = 2048
"""Connections the kernel holds for the server before it accepts them (uvicorn's default)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class ViewerApp:
    """The viewer as an ASGI application: the pages of ``store``'s episodes (only those
    tagged ``tag`` when given), for GET and HEAD requests."""

    def __init__(self, store: EpisodeStore, tag: str | None = None) -> None:
        self.store = store
        self.tag = tag

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no lifespan events to handle
        method = scope["method"]
        if method in ("GET", "HEAD"):
            raw = scope.get("raw_path") or scope["path"].encode()
            path = raw.decode("latin-1")
            query = scope.get("query_string", b"").decode("latin-1")
            status, page = await asyncio.to_thread(self.page, path, query)
        else:
            status, page = HTTPStatus.METHOD_NOT_ALLOWED, render_message("not allowed", method)
        body = page.encode("utf-8")
        headers = [
            (b"Content-Type", b"text/html; charset=utf-8"),
            (b"Content-Length", str(len(body)).encode()),
            (b"Content-Security-Policy", content_security_policy(static=False).encode()),
            (b"X-Content-Type-Options", b"nosniff"),
            (b"Cache-Control", b"no-store"),
        ]
        await send({"type": "http.response.start", "status": int(status), "headers": headers})
        await send({"type": "http.response.body", "body": body if method != "HEAD" else b""})

    def page(self, path: str, query: str) -> tuple[HTTPStatus, str]:
        """The status and page for GET ``path`` (as sent, percent-encoded) with ``query``."""
        parts = [urllib.parse.unquote(part) for part in path.split("/")[1:]]
        try:
            if parts in ([""], []):
                return self._index(dict(urllib.parse.parse_qsl(query)))
            if len(parts) == 2 and parts[0] == "episode":
                return self._episode(parts[1])
            if len(parts) == 2 and parts[0] == "tag":
                return self._tag(parts[1])
            return HTTPStatus.NOT_FOUND, render_message("not found", path)
        except (StorageError, ValueError) as error:
            # An unreachable server or a record that cannot be read: said on the page.
            return HTTPStatus.INTERNAL_SERVER_ERROR, render_message("cannot show this", str(error))

    def summaries(self) -> list[EpisodeSummary]:
        """The episodes this viewer shows, oldest first."""
        return self.store.summaries(tag=self.tag)

    def _index(self, query: dict[str, str]) -> tuple[HTTPStatus, str]:
        try:
            selected = EpisodeFilter.from_query(query)
        except ValueError as error:
            return HTTPStatus.BAD_REQUEST, render_message("bad filter", str(error))
        return HTTPStatus.OK, render_index(self.summaries(), selected)

    def _episode(self, episode_id: str) -> tuple[HTTPStatus, str]:
        try:
            record = self.store.load(episode_id)
        except RecordNotFoundError as error:
            return HTTPStatus.NOT_FOUND, render_message("not found", str(error))
        if self.tag is not None and record.tag != self.tag:
            message = f"episode {episode_id} is not tagged {self.tag}"
            return HTTPStatus.NOT_FOUND, render_message("not found", message)
        return HTTPStatus.OK, render_episode(record)

    def _tag(self, tag: str) -> tuple[HTTPStatus, str]:
        if self.tag is not None and tag != self.tag:
            message = f"this viewer shows the episodes tagged {self.tag} only"
            return HTTPStatus.NOT_FOUND, render_message("not found", message)
        records = [self.store.load(summary.episode_id) for summary in self.store.summaries(tag=tag)]
        return HTTPStatus.OK, render_tag(tag, records)


class ViewerServer:
    """Serves :class:`ViewerApp` of ``store`` (only the episodes tagged ``tag`` when given)
    on ``host``:``port`` (0 picks a free port) with uvicorn. The address is bound when it is
    built (``OSError`` if it cannot be, e.g. a port in use), so :attr:`url` is known before
    :meth:`serve_forever`; :meth:`shutdown` (from another thread) stops it. Use it as a
    context manager to release the address."""

    def __init__(
        self, store: EpisodeStore, host: str = "127.0.0.1", port: int = 0, tag: str | None = None
    ) -> None:
        import uvicorn

        self.app = ViewerApp(store, tag)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.create_server((host, port), family=family, backlog=_BACKLOG)
        config = uvicorn.Config(
            self.app,
            lifespan="off",
            log_config=None,  # the logging module as the program set it up, nothing on stderr
            log_level="warning",
            access_log=False,
            backlog=_BACKLOG,
            # asyncio's loop, as uvicorn's "auto" would pick uvloop (installed for batch
            # workers) and, in uvicorn before 0.36, set its policy for the whole process.
            loop="asyncio",
        )
        self._server = uvicorn.Server(config)
        self._stopped = threading.Event()
        self._stopped.set()

    @property
    def url(self) -> str:
        """The address of the episode list, e.g. ``http://127.0.0.1:8765/``."""
        host, port = self._socket.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown` (or, in the main thread, Ctrl-C, which propagates
        as KeyboardInterrupt once the server has stopped)."""
        self._stopped.clear()
        try:
            self._server.run(sockets=[self._socket])
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop :meth:`serve_forever` and wait until it has returned."""
        self._server.should_exit = True
        self._stopped.wait()

    def close(self) -> None:
        """Release the address."""
        self._socket.close()

    def __enter__(self) -> ViewerServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def serve(
    store: EpisodeStore,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    tag: str | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the viewer of ``store`` until KeyboardInterrupt, which propagates after the
    server is closed. ``on_ready`` gets the URL once the address is bound (requests wait
    from then on). ``OSError`` if the address cannot be bound."""
    with ViewerServer(store, host, port, tag) as server:
        if on_ready is not None:
            on_ready(server.url)
        server.serve_forever()


def static_page(store: EpisodeStore, *, tag: str | None = None) -> str:
    """The viewer of ``store``'s episodes (only those tagged ``tag`` when given) as one
    self-contained HTML file: no server, no network, every episode inside."""
    summaries = store.summaries(tag=tag)
    records = [store.load(summary.episode_id) for summary in summaries]
    return render_static(records, summaries)
