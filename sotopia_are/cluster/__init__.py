"""Running a study's episodes on a Ray cluster, with its state in one Redis.

:func:`ray_batch` is :func:`sotopia_are.studies.batch` with the worker jobs run as Ray
actors (``sotopia-are batch --cluster ray://HOST:PORT``); :class:`RedisLimiter` keeps each
endpoint's concurrency limit across the cluster. Ray itself is imported only when a batch
runs (``pip install 'sotopia-are[ray]'``).
"""

from sotopia_are.cluster.batch import ClusterError, cluster_store_url, ray_batch
from sotopia_are.cluster.limiter import RedisLimiter

__all__ = ["ClusterError", "RedisLimiter", "cluster_store_url", "ray_batch"]
