"""`round_trip`: commands sent at once on one of the client's connections, their replies
read as the server sends them.

redis-py's pipeline packs each command through its serializer, wraps each reply in its
response callback (an XRANGE entry made a dict, an HMGET list checked again) and keeps a
command stack: for the store's bulk reads (ten thousand HMGETs to list a tag, a stream
pair per exported episode) that was as much client work as reading the replies. Here
each command is packed by hiredis in one call and each reply read as the connection's
parser gives it, on a connection of the client's pool, with its retry settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import hiredis
import redis

__all__ = ["round_trip"]


def round_trip(
    client: redis.Redis[Any], commands: Sequence[tuple[str, ...]], *, decode: bool = True
) -> list[Any]:
    """The replies of ``commands``, sent in one round trip on a connection of ``client``'s
    pool: without redis-py's response callbacks (a hash is a mapping in RESP3, a flat list
    of names and values in RESP2; a stream entry ``[id, [name, value, ...]]``), decoded
    as the client decodes unless ``decode`` is false, an error reply as its
    ``ResponseError`` (as a pipeline's ``execute(raise_on_error=False)`` gives it).
    redis-py's errors otherwise; the connection is closed after any (a lost connection,
    an interrupt with replies unread) and the round trip retried as the client's
    connections retry."""
    if not commands:
        return []
    pool = client.connection_pool
    conn: Any = pool.get_connection()
    try:
        return cast(
            list[Any],
            conn.retry.call_with_retry(
                lambda: _send_and_read(conn, commands, decode), lambda _: conn.disconnect()
            ),
        )
    finally:
        pool.release(conn)


def _send_and_read(conn: Any, commands: Sequence[tuple[str, ...]], decode: bool) -> list[Any]:
    try:
        # hiredis's stubs take a tuple of one argument.
        packed = [hiredis.pack_command(command) for command in commands]  # type: ignore[arg-type]
        conn.send_packed_command([b"".join(packed)])
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(conn.read_response(disable_decoding=not decode))
            except redis.ResponseError as error:
                replies.append(error)
    except BaseException:
        conn.disconnect()
        raise
    return replies
