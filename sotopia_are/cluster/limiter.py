"""`RedisLimiter`: each endpoint's limit on requests in flight, shared through one Redis by
every process of a cluster.

An endpoint's slots are a sorted set (``sotopia_are:limit:<endpoint>``) of leases, random
ids scored by their expiry on the Redis server's clock, so the nodes' clocks do not matter.
Taking a slot is one Lua script: drop the expired leases, add one if fewer than ``limit``
remain. A holder renews its leases every ``ttl_s / 3`` from a background thread; one that
dies (its node lost, ``kill -9``) stops renewing and its slots come back after ``ttl_s``.
Redis has no blocking semaphore, so a waiter polls, with a pause growing to
:data:`MAX_POLL_S` (short next to the model call it waits to make).

Redis is called through the synchronous client in a thread (``asyncio.to_thread``): the
limiter then serves any event loop, and its renewals go on while a loop is busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import uuid

import redis

from sotopia_are.storage.keys import KEY_PREFIX

__all__ = ["MAX_POLL_S", "RedisLimiter"]

MAX_POLL_S = 0.25
"""The longest pause between two tries of a waiting request."""

_log = logging.getLogger(__name__)

# KEYS[1] the endpoint's set; ARGV: limit, ttl (s), lease id. 1 if taken, 0 if full.
_TAKE = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) * 1000))
return 1
"""

# KEYS[1] the endpoint's set; ARGV: ttl (s), lease id. 1 if renewed, 0 if it was reclaimed.
_RENEW = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local renewed = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1]) * 1000))
return renewed
"""


class RedisLimiter:
    """At most ``limit`` slots per endpoint among every process using the Redis at ``url``
    (a :class:`~sotopia_are.llm.concurrency.SharedLimit`). :meth:`close` gives back what
    this process holds and stops its renewals."""

    def __init__(self, url: str, limit: int, *, ttl_s: float = 15.0) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.limit = limit
        self.ttl_s = ttl_s
        self._client = redis.Redis.from_url(url, decode_responses=True)
        self._take = self._client.register_script(_TAKE)
        self._renew = self._client.register_script(_RENEW)
        self._lock = threading.Lock()
        self._held: dict[str, list[str]] = {}
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    @staticmethod
    def key(endpoint: str) -> str:
        """The sorted set of ``endpoint``'s leases."""
        return f"{KEY_PREFIX}:limit:{endpoint}"

    async def acquire(self, endpoint: str) -> None:
        """Wait for one of ``endpoint``'s slots and hold it (renewed until released)."""
        lease = uuid.uuid4().hex
        pause = 0.005
        while not await asyncio.to_thread(self._try, endpoint, lease):
            # Jittered, so waiters on many nodes do not poll in step.
            await asyncio.sleep(pause * random.uniform(0.5, 1.5))
            pause = min(pause * 2, MAX_POLL_S)

    async def release(self, endpoint: str) -> None:
        """Give back one of the slots of ``endpoint`` this process holds."""
        with self._lock:
            lease = self._held[endpoint].pop()
        await asyncio.to_thread(self._client.zrem, self.key(endpoint), lease)

    def in_use(self, endpoint: str) -> int:
        """How many of ``endpoint``'s slots are held now, by every process."""
        seconds, micros = self._client.time()
        return int(self._client.zcount(self.key(endpoint), seconds + micros / 1e6, "+inf"))

    def close(self) -> None:
        """Give back every slot this process holds and stop renewing."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        with self._lock:
            held, self._held = self._held, {}
        with contextlib.suppress(redis.RedisError):
            for endpoint, leases in held.items():
                if leases:
                    self._client.zrem(self.key(endpoint), *leases)
        self._client.close()

    def _try(self, endpoint: str, lease: str) -> bool:
        if not self._take(keys=[self.key(endpoint)], args=[self.limit, self.ttl_s, lease]):
            return False
        with self._lock:
            self._held.setdefault(endpoint, []).append(lease)
            if self._renewer is None:
                self._renewer = threading.Thread(
                    target=self._keep, name="sotopia-are-limiter", daemon=True
                )
                self._renewer.start()
        return True

    def _keep(self) -> None:
        """Renew every held lease every ``ttl_s / 3`` until :meth:`close`."""
        while not self._stop.wait(self.ttl_s / 3):
            with self._lock:
                held = [(e, lease) for e, leases in self._held.items() for lease in leases]
            try:
                with self._client.pipeline(transaction=False) as pipe:
                    for endpoint, lease in held:
                        self._renew(
                            keys=[self.key(endpoint)], args=[self.ttl_s, lease], client=pipe
                        )
                    renewed = pipe.execute()
            except redis.RedisError as error:  # the next round tries again, within the ttl
                _log.warning("could not renew concurrency leases: %s", error)
                continue
            lost = sum(not ok for ok in renewed)
            if lost:
                # Released meanwhile, or this process stalled past the ttl and its slots
                # went to others: the limit may be exceeded until these requests end.
                _log.debug("%d concurrency lease(s) were no longer held when renewed", lost)
