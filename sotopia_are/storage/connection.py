"""`connect`: the store on ``REDIS_OM_URL``'s server, or on the embedded one.

Which Redis: the ``url`` argument, else ``$REDIS_OM_URL`` (``redis://``, ``rediss://``
for TLS, ``unix://``; a password as ``redis://:secret@host:6379/0``), else the embedded
server in the data directory (``data_dir``, else ``$SOTOPIA_ARE_DATA_DIR``, else the
per-user default, see :func:`~sotopia_are.storage.embedded.default_data_dir`). The
server is pinged before the store is returned, so an unreachable one is a clear error
before any work starts, and nothing has been written.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

import redis

from sotopia_are.storage.embedded import DATA_DIR_ENV, EmbeddedRedis, default_data_dir
from sotopia_are.storage.errors import StorageUnavailableError
from sotopia_are.storage.store import EpisodeStore

__all__ = ["REDIS_URL_ENV", "connect", "redact_url"]

REDIS_URL_ENV = "REDIS_OM_URL"
"""The environment variable naming a Redis server (redis-om's own)."""

_CONNECT_TIMEOUT_S = 5.0


def connect(url: str | None = None, data_dir: str | os.PathLike[str] | None = None) -> EpisodeStore:
    """A store on a reachable Redis; :class:`StorageUnavailableError` naming the fix if not.

    ``url`` wins over ``$REDIS_OM_URL``; ``data_dir`` applies only to the embedded server.
    The server is pinged before anything is written. Use the store as a context manager
    (or call ``close()``): the last process to leave an embedded server stops it.

    Args:
        url: A Redis URL (``redis://host:6379/0``, ``rediss://`` for TLS, a password as
            ``redis://:secret@host:6379/0``). Default: ``$REDIS_OM_URL``, else the
            embedded Redis.
        data_dir: Where the embedded Redis keeps its files (default:
            ``$SOTOPIA_ARE_DATA_DIR``, else ``~/.local/share/sotopia-are``); processes
            using one directory share one server.

    Returns:
        The :class:`EpisodeStore` on that server.

    Raises:
        StorageUnavailableError: The server cannot be reached, refused the password, or
            the embedded one could not start; the message names the fix.

    Example:
        ```python
        with sa.connect() as store:                    # the embedded Redis
            print(store.episode_ids(tag="pilot"))
        store = sa.connect("redis://localhost:6379/0")  # a Redis server
        ```
    """
    source = "the url given" if url else REDIS_URL_ENV
    url = url or os.environ.get(REDIS_URL_ENV) or None
    if url is None:
        return _connect_embedded(data_dir)
    location = f"Redis at {redact_url(url)}"
    try:
        client = redis.Redis.from_url(
            url, decode_responses=True, socket_connect_timeout=_CONNECT_TIMEOUT_S
        )
        client.ping()
    except (redis.RedisError, ValueError, OSError) as error:
        raise StorageUnavailableError(
            f"cannot use {location} ({source}): {type(error).__name__}: {error}. Fix: start "
            f"that server or correct {source}; to use the embedded Redis instead, unset "
            f"{REDIS_URL_ENV} (its data goes to {default_data_dir()}, or ${DATA_DIR_ENV})."
        ) from error
    return EpisodeStore(client, location=location, url=url)


def _connect_embedded(data_dir: str | os.PathLike[str] | None) -> EpisodeStore:
    server = EmbeddedRedis(default_data_dir() if data_dir is None else data_dir)
    client = server.start()
    store = EpisodeStore(
        client, location=f"the embedded Redis in {server.data_dir}", embedded=server
    )
    try:
        store.ping()
    except StorageUnavailableError:
        server.stop()
        raise
    return store


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***``, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    credentials, _, address = parts.netloc.rpartition("@")
    user = credentials.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{address}"))
