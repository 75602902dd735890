"""`ray_batch`: :func:`~sotopia_are.studies.batch` with its workers on a Ray cluster.

The batch is planned, resumed and reported on by the driver (this process) exactly as a
local one — same episode ids, same plan, same callbacks — and only the worker jobs run on
the cluster (:class:`~sotopia_are.cluster.executor.RayExecutor`, one actor per job, one CPU
each). Every node writes to the one store, so it must be a Redis server they all reach:
the embedded default (a unix socket on this machine) is refused.

Ray is imported here only when a batch is run, so ``sotopia_are.cluster`` itself is cheap
and a missing Ray is one clear error.
"""

from __future__ import annotations

import importlib
import os
import socket
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from sotopia_are.llm import LLMConfig
from sotopia_are.social import EpisodeSpec
from sotopia_are.storage import REDIS_URL_ENV, EpisodeStore, connect
from sotopia_are.studies import BatchError, BatchResult, batch
from sotopia_are.studies.batch import ModelChoice

__all__ = ["ClusterError", "cluster_store_url", "ray_batch"]

INSTALL_HINT = "pip install 'sotopia-are[ray]'"

_CONNECT_TIMEOUT_S = 5.0

# Passed to the cluster's workers: what litellm and our own settings read at import.
_FORWARDED_ENV = ("SOTOPIA_ARE_", "LITELLM_")


class ClusterError(BatchError):
    """A batch that cannot run on the cluster; the message says what to do."""


def cluster_store_url(store: EpisodeStore) -> str:
    """The URL every node reaches ``store`` at; :class:`ClusterError` naming the fix for the
    embedded server (or any unix socket), which only this machine reaches."""
    url = store.url
    if store.embedded is None and url is not None and not url.startswith("unix:"):
        return url
    raise ClusterError(
        f"a batch on a cluster needs a Redis server every node reaches, not {store.location}. "
        f"Fix: start redis-server where the nodes reach it (bind an address they see) and "
        f"set {REDIS_URL_ENV}=redis://HOST:6379/0 (or pass --redis-url)"
    )


def ray_batch(
    specs: Sequence[EpisodeSpec],
    models: str | ModelChoice | None = None,
    *,
    address: str,
    store: EpisodeStore | None = None,
    workers: int | None = None,
    **options: Any,
) -> BatchResult:
    """:func:`~sotopia_are.studies.batch` (``options`` are its keywords) with the workers on
    the Ray cluster at ``address`` (``ray://HOST:PORT`` through its client server, or the
    head's ``HOST:PORT`` from a node of the cluster), ``workers`` actors (default: the
    live nodes' CPUs; an actor no node can place waits for one to join). ``store``
    (default: :func:`~sotopia_are.storage.connect`) must be a Redis server every node
    reaches. ``config.max_concurrency``, if set, bounds each endpoint's requests in flight
    across the whole cluster. :class:`ClusterError` for the embedded store, without Ray
    installed, or for an unreachable cluster."""
    owned = store is None
    used = store if store is not None else connect()
    try:
        cluster_store_url(used)
        ray = _import_ray()
        connected_here = _connect(ray, address)
        try:
            from .executor import RayExecutor

            count = workers or _live_cpus(ray)
            # The user's bound, not the per-worker one the batch may put in its jobs.
            config: LLMConfig | None = options.get("config")
            executor = RayExecutor(config.max_concurrency if config is not None else None)
            return batch(specs, models, store=used, workers=count, executor=executor, **options)
        finally:
            if connected_here:
                ray.shutdown()
    finally:
        if owned:
            used.close()


def _import_ray() -> ModuleType:
    try:
        return importlib.import_module("ray")
    except ImportError as error:
        raise ClusterError(
            f"running a batch on a Ray cluster needs Ray, which is not installed ({error}). "
            f"Fix: {INSTALL_HINT}"
        ) from None


def _live_cpus(ray: ModuleType) -> int:
    """The CPUs of the cluster's live nodes (a lost node's would get actors never placed)."""
    cpus = sum(node["Resources"].get("CPU", 0) for node in ray.nodes() if node["Alive"])
    return max(int(cpus), 1)


def _connect(ray: ModuleType, address: str) -> bool:
    """Connect to the cluster at ``address`` unless this process already is; whether it
    connected here (and so disconnects when the batch ends)."""
    if ray.is_initialized():
        return False
    _reachable(address)
    forwarded = {k: v for k, v in os.environ.items() if k.startswith(_FORWARDED_ENV)}
    failures = (ConnectionError, RuntimeError, ValueError)
    try:
        _init(ray, address, forwarded)
    except failures as error:
        if not address.startswith("ray://"):
            raise _unreachable(address, error) from None
        # Ray's client server now and then fails to start a session's own server (about
        # once in five connections here); a second try gets a new one.
        ray.shutdown()
        try:
            _init(ray, address, forwarded)
        except failures as again:
            raise _unreachable(address, again) from None
    return True


def _init(ray: ModuleType, address: str, env: dict[str, str]) -> None:
    ray.init(
        address=address,
        runtime_env={"env_vars": env},
        logging_level="WARNING",
        log_to_driver=False,
    )


def _reachable(address: str) -> None:
    """Fail at once if nothing listens at ``address``'s host and port: Ray's own connect
    waits a long time (for ever, at a head's address) before it gives up."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "auto", or a form Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise _unreachable(address, error) from None


def _unreachable(address: str, error: Exception) -> ClusterError:
    return ClusterError(
        f"cannot reach the Ray cluster at {address}: {error}. Fix: start it "
        "(ray start --head on one machine, ray start --address=HEAD:PORT on the others) "
        "or correct the address (ray://HEAD:10001 through the client server)"
    )
