"""The viewer as a local web server (the standard library's ``ThreadingHTTPServer``),
read-only over an episode store, and as one static file.

Routes: ``/`` the episode list (filters in the query string, see :class:`EpisodeFilter`),
``/episode/<id>`` one episode, ``/tag/<tag>`` one batch's summary. Every page is built
from the store when it is asked for, so a running batch shows up as it goes.
"""

from __future__ import annotations

import http.server
import logging
import urllib.parse
from collections.abc import Callable
from http import HTTPStatus

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

__all__ = ["ViewerServer", "serve", "static_page"]

_log = logging.getLogger(__name__)


class ViewerServer(http.server.ThreadingHTTPServer):
    """Serves the pages of ``store``'s episodes (only those tagged ``tag`` when given)
    on ``host``:``port`` (0 picks a free port); :attr:`url` says where."""

    daemon_threads = True

    def __init__(
        self, store: EpisodeStore, host: str = "127.0.0.1", port: int = 0, tag: str | None = None
    ) -> None:
        self.store = store
        self.tag = tag
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        """The address of the episode list, e.g. ``http://127.0.0.1:8765/``."""
        host, port = self.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{port}/"

    def summaries(self) -> list[EpisodeSummary]:
        """The episodes this server shows, oldest first."""
        return self.store.summaries(tag=self.tag)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: ViewerServer

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(part) for part in url.path.split("/")[1:]]
        try:
            if parts in ([""], []):
                query = dict(urllib.parse.parse_qsl(url.query))
                self._index(query)
            elif len(parts) == 2 and parts[0] == "episode":
                self._episode(parts[1])
            elif len(parts) == 2 and parts[0] == "tag":
                self._tag(parts[1])
            else:
                self._send(HTTPStatus.NOT_FOUND, render_message("not found", self.path))
        except (StorageError, ValueError) as error:
            # An unreachable server or a record that cannot be read: said on the page.
            message = render_message("cannot show this", str(error))
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, message)

    def _index(self, query: dict[str, str]) -> None:
        try:
            selected = EpisodeFilter.from_query(query)
        except ValueError as error:
            self._send(HTTPStatus.BAD_REQUEST, render_message("bad filter", str(error)))
            return
        self._send(HTTPStatus.OK, render_index(self.server.summaries(), selected))

    def _episode(self, episode_id: str) -> None:
        try:
            record = self.server.store.load(episode_id)
        except RecordNotFoundError as error:
            self._send(HTTPStatus.NOT_FOUND, render_message("not found", str(error)))
            return
        if self.server.tag is not None and record.tag != self.server.tag:
            message = f"episode {episode_id} is not tagged {self.server.tag}"
            self._send(HTTPStatus.NOT_FOUND, render_message("not found", message))
            return
        self._send(HTTPStatus.OK, render_episode(record))

    def _tag(self, tag: str) -> None:
        if self.server.tag is not None and tag != self.server.tag:
            message = f"this viewer shows the episodes tagged {self.server.tag} only"
            self._send(HTTPStatus.NOT_FOUND, render_message("not found", message))
            return
        store = self.server.store
        records = [store.load(summary.episode_id) for summary in store.summaries(tag=tag)]
        self._send(HTTPStatus.OK, render_tag(tag, records))

    def _send(self, status: HTTPStatus, page: str) -> None:
        body = page.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", content_security_policy(static=False))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        # To the logging module, not stderr: a terminal running the viewer stays quiet.
        _log.debug("%s " + format, self.address_string(), *args)


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
