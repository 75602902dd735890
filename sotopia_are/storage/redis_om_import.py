"""redis-om's names, imported so that a malformed ``REDIS_OM_URL`` is no import traceback.

redis-om builds a client from ``REDIS_OM_URL`` while it is being imported (its models'
default connection), so a value that is no Redis URL (``garbage``, ``http://…``,
``redis://host:port``) raised a bare ``ValueError`` from any import of the storage layer,
before :func:`~sotopia_are.storage.connect` could name the problem as it does for the same
value given as ``--redis-url``. Such a value is hidden from that one import;
``connect`` then reports it. Nothing is lost: the store reads and writes on its own
connection, never on redis-om's default one.
"""

from __future__ import annotations

import os

import redis

__all__ = ["Field", "HashModel"]

_URL_ENV = "REDIS_OM_URL"


def _parses(url: str) -> bool:
    """Whether redis-py makes a client of ``url`` (it parses it; it does not connect)."""
    try:
        redis.Redis.from_url(url).close()
    except (ValueError, TypeError):
        return False
    return True


_url = os.environ.get(_URL_ENV)
if _url and not _parses(_url):
    del os.environ[_URL_ENV]
    try:
        from redis_om import Field, HashModel
    finally:
        os.environ[_URL_ENV] = _url
else:
    from redis_om import Field, HashModel
