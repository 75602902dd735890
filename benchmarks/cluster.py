"""Episodes/s of a batch on a local Ray cluster of 1 node, then 2 nodes, on this machine;
and what each episode costs the shared Redis and the driver.

The same batch (E two-agent episodes x T turns, rated by the judge) runs on a head with
one CPU, then again (new tag) after a second one-CPU node joins: one worker actor per node,
as ``sotopia-are batch --cluster`` runs it; last, as a local batch of two worker processes
(no Ray) for comparison. The store is Debian's ``redis-server``; the
model is the stand-in server (``python -m sotopia_are.testing --simple``, a separate process)
answering after ``--latency`` seconds. ``LLMConfig.max_concurrency`` is set, so every
request also takes and gives back a slot of the Redis limiter.

Per episode it reports the Redis commands (from ``INFO commandstats``, the limiter's Lua
scripts' own commands included; a last run without the limiter shows the store's alone)
and the driver's CPU time: what bounds a larger cluster. The machine's load (``uptime``)
is printed next to the numbers: other work on the same cores skews them.

Run: ``python benchmarks/cluster.py [--episodes 48] [--turns 6] [--latency 0.05]
[--concurrency 32]`` (needs ``pip install 'sotopia-are[ray]'`` and ``redis-server``).

Measured here (2026-11-25; two cores shared with other work; ray 2.60, redis-server 7.0),
``--episodes 256 --turns 6``, 0.05 s latency, concurrency 32:

==========================  ==========  =====================  ==================  =============
run                         episodes/s  driver CPU ms/episode  Redis cmds/episode  load (1 min)
==========================  ==========  =====================  ==================  =============
1 node                      31.2        1.3                    132                 2.25
2 nodes                     35.7        1.3                    132                 2.27
2 nodes, no limiter         44.3        1.3                    83                  2.17
local, 2 processes, no Ray  58.3        0.3                    83                  2.07
==========================  ==========  =====================  ==================  =============

With 96 episodes: 24.6 / 27.6 / 29.2 / 43.1 at load 2.8; at load 8 (other helpers busy):
18.4 on 1 node, 14.6 on 2. Both "nodes" share this machine's two cores with the stand-in
server, Redis, the driver and other work, so a second node adds little (+14%): the batch
is CPU-bound. What the table shows is the cluster path's cost at a 50 ms model: Ray's own
processes and actors (~25% below the local pool), 1 ms more driver CPU per episode, and
the limiter's two Redis round trips per request (~20%; nothing next to a real model's
second).

Redis per episode of T turns (from the 2- and 6-turn runs): 47 + 6·T commands from the
store (20 + 5·T of them writes: two stream entries, a hash field and a counter per turn;
the rest index sets, the record and 3 MULTI/EXEC transactions), plus 2 round trips per
model call for the limiter (take, release; a renewal every 5 s of a held slot), each
take a Lua script of 5 commands inside Redis.

The same redis-server here (``redis-benchmark``, 20 clients, at load 3.3) serves ~150k
SET/HSET/SADD/ZADD a second and ~88k limiter-like Lua takes (TIME, ZREMRANGEBYSCORE,
ZCARD, ZADD, ZREM) a second, on one core.

A 10-node cluster, estimated from these numbers: an episode of 20 turns + a judge call
costs ~170 store commands and ~42 limiter round trips, ~210 in all. Counting ~100k mixed
commands/s (transactions and whole-hash reads are dearer than SET), one Redis bounds a
study at ~475 such episodes/s, ~10k model calls/s. 10 nodes on real models (say 64
requests in flight per node, ~1 s a call: 640 calls/s, ~30 episodes/s) use ~6.5k
commands/s, ~5% of it. The driver (1.7 ms CPU per episode, one poll per actor a second)
keeps up with ~500 episodes/s. What limits 10 nodes first is elsewhere: (1) chunks:
the actors take chunks of 4 waves of their concurrency as they free up, so each chunk's
last wave leaves slots idle (up to ~1/8 of an actor's time with episodes of uneven
length), actors are placed when the batch starts (a node that joins later is not used),
and a lost node's chunk waits for ``--resume``; (2) the
limiter's polling when an endpoint's limit is far below the episodes at once: each
waiting request tries up to 4 times a second, so 2,500 waiters on a saturated endpoint
make ~10k Lua calls/s (~11% of what Redis takes here), the first hot spot in Redis;
(3) a resume's plan reads every episode of the tag in the driver (O(N) hashes: seconds
for 10^5 episodes).
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import ray
import redis

import sotopia_are as sa
from sotopia_are.cluster import ray_batch

# The test suite's real parts: redis-server and a Ray cluster of ray start processes.
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "cluster"))
from cluster_support import RayCluster, RedisServer, free_port, redis_server_binary, spec

MODEL = "openai/test-model"
READS = {
    "get", "hget", "hgetall", "hmget", "exists", "scan", "smembers", "sismember", "scard",
    "sinter", "sunion", "zrange", "zrangebyscore", "zrevrange", "zcard", "zcount", "zscore",
    "xrange", "xrevrange", "xread", "xlen", "type", "ping", "info", "time", "client",
    "script", "hello", "select", "ttl", "pttl", "mget", "keys", "strlen", "lrange", "llen",
}  # fmt: skip


def command_counts(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run(
    address: str | None,
    url: str,
    api_base: str,
    args: argparse.Namespace,
    tag: str,
    *,
    limited: bool,
) -> dict[str, float]:
    """One batch: on the cluster at ``address``, or (None) local, in two processes."""
    specs = [spec(f"{tag}-{n}", args.turns) for n in range(args.episodes)]
    # Unset, each process keeps its own default bound and no limiter is used.
    limit = {"max_concurrency": args.concurrency} if limited else {}
    config = sa.LLMConfig(api_base=api_base, timeout_s=60, **limit)
    client = redis.Redis.from_url(url, decode_responses=True)
    before = command_counts(client)
    cpu, wall = time.process_time(), time.perf_counter()
    with sa.connect(url) as store:
        options = dict(tag=tag, store=store, judge_model=MODEL, config=config)
        result = (
            sa.batch(specs, MODEL, **options, concurrency=args.concurrency, workers=2)
            if address is None
            else ray_batch(specs, MODEL, address=address, **options, concurrency=args.concurrency)
        )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = command_counts(client)
    delta = {name: after[name] - before.get(name, 0) for name in after}
    delta = {name: count for name, count in delta.items() if count > 0 and name != "info"}
    # Commands a Lua script runs are counted too; without the limiter there is none.
    writes = sum(count for name, count in delta.items() if name not in READS)
    assert not result.failed, [o.reason for o in result.outcomes if o.failed]
    return {
        "workers": result.workers,
        "wall_s": wall,
        "episodes_per_s": args.episodes / wall,
        "driver_cpu_ms_per_episode": 1000 * cpu / args.episodes,
        "redis_commands_per_episode": sum(delta.values()) / args.episodes,
        "redis_writes_per_episode": writes / args.episodes,
        "detail": delta,  # type: ignore[dict-item]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=48)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    binary = redis_server_binary()
    if binary is None:
        sys.exit("redis-server is not installed (apt-get install redis-server)")
    temp = Path(tempfile.mkdtemp(prefix="cluster-bench-"))
    port = free_port()
    llm = subprocess.Popen(
        [sys.executable, "-m", "sotopia_are.testing", "--port", str(port), "--simple",
         "--latency", str(args.latency)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert llm.stdout is not None
    llm.stdout.readline()  # it is serving
    server = RedisServer(binary, temp / "redis")
    cluster = RayCluster(temp)
    rows: list[tuple[str, dict[str, float], str]] = []
    try:
        cluster.wait_for_cpus(1)
        # Connected once here, so the runs' driver CPU leaves out connecting.
        ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
        api_base = f"http://127.0.0.1:{port}/v1"
        go = functools.partial(run, cluster.address, server.url, api_base, args)
        run(
            cluster.address,
            server.url,
            api_base,
            argparse.Namespace(**{**vars(args), "episodes": 4}),
            "warm-up",
            limited=True,
        )
        rows.append(("1 node", go("one", limited=True), uptime()))
        cluster.add_node()
        cluster.wait_for_cpus(2)
        rows.append(("2 nodes", go("two", limited=True), uptime()))
        rows.append(("2 nodes, no limiter", go("free", limited=False), uptime()))
        local = run(None, server.url, api_base, args, "local", limited=False)
        rows.append(("local, 2 processes, no Ray", local, uptime()))
    finally:
        ray.shutdown()
        cluster.stop()
        server.stop()
        llm.terminate()
        llm.wait()
    print(
        f"{args.episodes} episodes x {args.turns} turns + judge, latency {args.latency} s, "
        f"concurrency {args.concurrency}"
    )
    print("| cluster | episodes/s | wall s | driver CPU ms/episode | Redis cmds/episode "
          "| writes/episode | load (uptime) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, row, load in rows:
        print(
            f"| {name} | {row['episodes_per_s']:.2f} | {row['wall_s']:.1f} "
            f"| {row['driver_cpu_ms_per_episode']:.1f} | {row['redis_commands_per_episode']:.0f} "
            f"| {row['redis_writes_per_episode']:.0f} "
            f"| {load.split('load average:')[-1].strip()} |"
        )
    for name, row, _ in rows[1:3]:
        print(f"Redis commands per episode, {name}:")
        detail = row["detail"]
        assert isinstance(detail, dict)
        for command, count in sorted(detail.items(), key=lambda item: -item[1]):
            print(f"  {command:>16} {count / args.episodes:7.1f}")


if __name__ == "__main__":
    main()
