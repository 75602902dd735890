"""How many requests a local model server decodes at once, when it says.

llama.cpp's server answers ``GET /props`` (at its root, beside ``/v1``) with
``total_slots``: its ``--parallel`` decoding slots. An endpoint's
:class:`~sotopia_are.llm.concurrency.AdaptiveLimit` keeps at least that many requests in
flight (:meth:`~sotopia_are.llm.concurrency.AdaptiveLimit.serve_at_once`): on a CPU every
answer slows down as the slots share the cores, and a limit read from latency alone would
go below the slots and leave some idle while answers wait to be sent.

:func:`learning_slots` asks once per limit, on the first request sent to an ``api_base``,
and the first requests wait for the answer; a server without ``/props`` (vLLM, Ollama, a
provider) leaves the limit as it is.
"""

from __future__ import annotations

import asyncio
import json
import weakref

from sotopia_are.llm.concurrency import AdaptiveLimit
from sotopia_are.llm.config import Endpoint
from sotopia_are.llm.http_pools import get_once

__all__ = ["PROPS_TIMEOUT_S", "learning_slots", "server_root"]

PROPS_TIMEOUT_S = 5.0
"""How long ``GET /props`` may take; a running llama.cpp answers it at once."""

_MAX_PROPS_BYTES = 1024 * 1024
"""``/props`` holds the chat template (kilobytes); a longer body is not llama.cpp's."""

_ASKED: weakref.WeakKeyDictionary[AdaptiveLimit, asyncio.Task[None]] = weakref.WeakKeyDictionary()


def server_root(api_base: str) -> str:
    """Where a server serves ``/props``: ``api_base`` without its ``/v1``."""
    root = api_base.rstrip("/")
    return root.removesuffix("/v1")


def learning_slots(limit: AdaptiveLimit, endpoint: Endpoint) -> asyncio.Task[None] | None:
    """The task asking ``endpoint``'s server how many requests it decodes at once for
    ``limit``, while it runs (started on the first call, in the running loop); None once
    it is done, and for a provider's own endpoint. A request waits for it before taking a
    slot of ``limit``, so that the first burst sends the server its slots' worth, not the
    limit's initial guess (a running llama.cpp answers at once; a server that does not
    answer holds the first requests for :data:`PROPS_TIMEOUT_S` at most)."""
    if endpoint.api_base is None:
        return None
    asking = _ASKED.get(limit)
    if asking is None:
        asking = _ASKED[limit] = asyncio.get_running_loop().create_task(
            _learn(limit, server_root(endpoint.api_base))
        )
    return None if asking.done() else asking


async def _learn(limit: AdaptiveLimit, root: str) -> None:
    slots = await total_slots(root)
    if slots is not None:
        limit.serve_at_once(slots)


async def total_slots(root: str) -> int | None:
    """``total_slots`` of ``GET {root}/props`` (None: no answer, or not llama.cpp's)."""
    try:
        reply = await get_once(f"{root}/props", {}, _MAX_PROPS_BYTES, PROPS_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError):
        return None
    if reply.status != 200 or reply.body is None:
        return None
    try:
        props = json.loads(reply.body)
    except ValueError:
        return None
    slots = props.get("total_slots") if isinstance(props, dict) else None
    return slots if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0 else None
