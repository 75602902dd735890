"""People in the loop, measured: N hosted sessions played at once by simulated participants.

A real ``sotopia-are host`` process (uvicorn, the embedded Redis store) hosts N sessions of
the garden committee with two human seats each ("Jo Ng", "Benedikt Müller-Roth"); the
third seat is an LLM agent on the stand-in server (``python -m sotopia_are.testing``, the
play rule, answering after ``--latency`` seconds, its own process). This process plays
the 2N people as API clients over real HTTP (httpx): each long-polls
``/api/seat/changes`` and, when it is its turn, waits ``--think`` seconds and posts an
action whose text carries a unique mark. The latency measured is the one a person feels
of another: from just before the POST of an action to the moment the OTHER person of the
session receives a view holding that line (their long-poll answered). Also: the POST's
own round trip, the host's resident memory (built and waiting, and its peak while
playing; the embedded redis-server is its own process, reported apart), the CPU time of
the host, of this process (the people) and of the stand-in, and the machine's load
(``uptime``) before and after — other work shares the cores.

Run: ``python benchmarks/hosting.py [--sessions 50] [--turns 12] [--latency 0.05]
[--think 0.2]``; it prints a markdown table (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
GARDEN = ROOT / "examples" / "scenarios" / "garden_committee.json"
HUMANS = ("Jo Ng", "Benedikt Müller-Roth")
JOIN = re.compile(r"^join (?P<seat>.+?)(?: #(?P<session>\d+))?: (?P<url>\S+)#t=(?P<token>\S+)$")
MARK = re.compile(r"\[m(\d+)\]")


@dataclass
class Results:
    sent: dict[int, float] = field(default_factory=dict)  # mark -> time posted
    seen: list[float] = field(default_factory=list)  # action -> the other seat has it
    posts: list[float] = field(default_factory=list)  # POST round trips
    marks: int = 0
    errors: list[str] = field(default_factory=list)
    cpu: float = 0.0
    lag: list[float] = field(default_factory=list)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def start_stand_in(latency: float) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "sotopia_are.testing", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--latency", str(latency)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    url = re.search(r"at (\S+)", line)
    if url is None:
        raise SystemExit(f"the stand-in server did not start: {line!r}")
    return process, url.group(1)


def start_host(
    api_base: str, sessions: int, turns: int, data_dir: str
) -> tuple[subprocess.Popen[str], list[str]]:
    env = {**os.environ, "SOTOPIA_ARE_DATA_DIR": data_dir}
    env.pop("REDIS_OM_URL", None)
    command = [
        sys.executable, "-m", "sotopia_are", "host", str(GARDEN),
        "--human", HUMANS[0], "--human", HUMANS[1], "--sessions", str(sessions),
        "--model", "openai/stand-in", "--api-base", api_base, "--api-key", "sk-bench",
        "--port", "0", "--max-turns", str(turns), "--turn-timeout", "300",
        "--tag", f"bench-hosting-{os.getpid()}-{sessions}", "--fresh",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    lines = [process.stdout.readline().strip() for _ in range(2 * sessions + 1)]
    if not lines[-1].startswith("monitor: "):
        process.kill()
        raise SystemExit(f"the host did not start: {lines[-3:]}")
    return process, lines[:-1]


def redis_of(data_dir: str) -> list[psutil.Process]:
    """The embedded redis-server(s) serving ``data_dir`` (started by the host, detached)."""
    found = []
    for candidate in psutil.process_iter(["cmdline", "cwd"]):
        text = " ".join(candidate.info.get("cmdline") or []) + (candidate.info.get("cwd") or "")
        if "redis" in text and data_dir in text:
            found.append(candidate)
    return found


def tree_rss(process: psutil.Process, redis: list[psutil.Process]) -> tuple[int, int]:
    """The host's own RSS and the embedded redis-server's."""
    return process.memory_info().rss, sum(server.memory_info().rss for server in redis)


async def person(
    http: httpx.AsyncClient,
    token: str,
    session: int,
    marks: dict[tuple[int, str], list[int]],
    seat: str,
    results: Results,
    think: float,
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    view = (await http.get("/api/seat", headers=headers)).json()
    seen_lines = 0
    own = marks.setdefault((session, seat), [])
    while True:
        now = time.perf_counter()
        lines = view["transcript"]
        for line in lines[seen_lines:]:
            found = MARK.search(line["text"])
            if found and line["sender"] != seat:
                results.seen.append(now - results.sent[int(found.group(1))])
        seen_lines = len(lines)
        if view["state"] in ("finished", "failed"):
            if view["state"] == "failed":
                results.errors.append(f"session {session} failed")
            return
        if view["your_turn"]:
            await asyncio.sleep(think)
            results.marks += 1
            mark = results.marks
            own.append(mark)
            body = {
                "client_id": f"m{mark}",
                "turn": view["turn"]["number"],
                "action": {"action_type": "speak", "argument": f"The herbs need sun [m{mark}]."},
            }
            results.sent[mark] = start = time.perf_counter()
            answer = await http.post("/api/seat/actions", json=body, headers=headers)
            results.posts.append(time.perf_counter() - start)
            if answer.status_code != 200:
                results.errors.append(answer.text)
        response = await http.get(
            "/api/seat/changes", params={"since": view["version"]}, headers=headers
        )
        view = response.json()


async def people(
    base: str, seats: list[tuple[str, int, str]], think: float, first_mark: int
) -> Results:
    """Play ``seats`` (token, session, seat) to the end; also sample this loop's lag."""
    results = Results(marks=first_mark)
    marks: dict[tuple[int, str], list[int]] = {}
    limits = httpx.Limits(max_connections=4 * len(seats) + 10)
    lag: list[float] = []
    done = asyncio.Event()

    async def watch_lag() -> None:
        while not done.is_set():
            start = time.perf_counter()
            await asyncio.sleep(0.05)
            lag.append(time.perf_counter() - start - 0.05)

    watcher = asyncio.create_task(watch_lag())
    started = time.process_time()
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
        await asyncio.gather(
            *(
                person(http, token, session, marks, seat, results, think)
                for token, session, seat in seats
            )
        )
    done.set()
    await watcher
    results.cpu = time.process_time() - started
    results.lag = lag
    return results


def play_people(
    base: str, seats: list[tuple[str, int, str]], think: float, first_mark: int
) -> Results:
    """:func:`people` in a process of its own."""
    return asyncio.run(people(base, seats, think, first_mark))


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    stand_in, api_base = start_stand_in(args.latency)
    try:
        with tempfile.TemporaryDirectory() as data_dir:
            load_before = uptime()
            host, lines = start_host(api_base, args.sessions, args.turns, data_dir)
            watched = psutil.Process(host.pid)
            await asyncio.sleep(1.0)
            redis = redis_of(data_dir)
            idle_rss, idle_children = tree_rss(watched, redis)
            cpu_start = sum(watched.cpu_times()[:2])
            peak = [idle_rss, idle_children]
            cpu_last = [cpu_start]

            async def sample() -> None:
                while host.poll() is None:
                    try:
                        rss, children = tree_rss(watched, redis)
                        cpu_last[0] = sum(watched.cpu_times()[:2])
                    except psutil.Error:
                        return
                    peak[0], peak[1] = max(peak[0], rss), max(peak[1], children)
                    await asyncio.sleep(0.25)

            sampler = asyncio.create_task(sample())
            parsed = [m for m in (JOIN.match(line) for line in lines) if m is not None]
            base = parsed[0].group("url").removesuffix("/join")
            seats = [
                (m.group("token"), int(m.group("session") or 1), m.group("seat")) for m in parsed
            ]
            # Both people of a session in the same process (a mark's time is per process).
            shares = [
                [seat for seat in seats if seat[1] % args.processes == index]
                for index in range(args.processes)
            ]
            started = time.perf_counter()
            model = psutil.Process(stand_in.pid)
            model_cpu = sum(model.cpu_times()[:2])
            loop = asyncio.get_running_loop()
            with concurrent.futures.ProcessPoolExecutor(args.processes) as pool:
                parts = await asyncio.gather(
                    *(
                        loop.run_in_executor(
                            pool, play_people, base, share, args.think, index * 1_000_000
                        )
                        for index, share in enumerate(shares)
                        if share
                    )
                )
            wall = time.perf_counter() - started
            results = Results()
            for part in parts:
                results.seen += part.seen
                results.posts += part.posts
                results.errors += part.errors
                results.cpu += part.cpu
                results.lag += part.lag
            model_cpu = sum(model.cpu_times()[:2]) - model_cpu
            await asyncio.wait_for(asyncio.to_thread(host.wait), 60)
            await sampler
            load_after = uptime()
    finally:
        stand_in.kill()
        stand_in.wait()
    cpu = cpu_last[0] - cpu_start
    return {
        "sessions": args.sessions,
        "people": len(lines),
        "actions": len(results.posts),
        "seen": len(results.seen),
        "p50": percentile(results.seen, 0.5) * 1000,
        "p95": percentile(results.seen, 0.95) * 1000,
        "max": max(results.seen) * 1000,
        "post_p50": percentile(results.posts, 0.5) * 1000,
        "post_p95": percentile(results.posts, 0.95) * 1000,
        "mean": statistics.fmean(results.seen) * 1000,
        "idle_rss": idle_rss / 2**20,
        "peak_rss": peak[0] / 2**20,
        "redis_rss": peak[1] / 2**20,
        "cpu": cpu,
        "client_cpu": results.cpu,
        "lag_p95": percentile(results.lag, 0.95) * 1000,
        "model_cpu": model_cpu,
        "wall": wall,
        "errors": results.errors,
        "load_before": load_before,
        "load_after": load_after,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--turns", type=int, default=12, help="max_turns of each session")
    parser.add_argument("--latency", type=float, default=0.05, help="the stand-in's seconds")
    parser.add_argument("--think", type=float, default=0.2, help="a person's seconds to act")
    parser.add_argument("--processes", type=int, default=2, help="processes playing the people")
    parser.add_argument(
        "--baseline", action="store_true", help="also measure one session, for memory per session"
    )
    args = parser.parse_args()
    rows = []
    if args.baseline:
        one = argparse.Namespace(**{**vars(args), "sessions": 1})
        rows.append(asyncio.run(measure(one)))
    rows.append(asyncio.run(measure(args)))
    print(
        "| sessions | people | actions | action → other seat sees it p50 / p95 / max (ms) "
        "| POST p50 / p95 (ms) | host RSS built → peak (MiB) | redis-server RSS (MiB) "
        "| CPU s: host / people / stand-in | wall (s) |"
    )
    print("|---:|---:|---:|---|---|---|---:|---|---:|")
    for row in rows:
        print(
            f"| {row['sessions']} | {row['people']} | {row['actions']} "
            f"| {row['p50']:.0f} / {row['p95']:.0f} / {row['max']:.0f} "
            f"| {row['post_p50']:.0f} / {row['post_p95']:.0f} "
            f"| {row['idle_rss']:.0f} → {row['peak_rss']:.0f} | {row['redis_rss']:.0f} "
            f"| {row['cpu']:.1f} / {row['client_cpu']:.1f} / {row['model_cpu']:.1f} "
            f"| {row['wall']:.1f} |"
        )
    if len(rows) == 2:
        per = (rows[1]["peak_rss"] - rows[0]["peak_rss"]) / (rows[1]["sessions"] - 1)
        built = (rows[1]["idle_rss"] - rows[0]["idle_rss"]) / (rows[1]["sessions"] - 1)
        print(f"\nmemory per session: {built:.2f} MiB built and waiting, {per:.2f} MiB at peak")
    for row in rows:
        print(f"\nload before: {row['load_before']}\nload after:  {row['load_after']}")
        print(f"host CPU per action: {1000 * row['cpu'] / max(1, row['actions']):.1f} ms")
        print(f"the people's event loops lagged {row['lag_p95']:.0f} ms at p95")
        if row["errors"]:
            print(f"errors: {row['errors'][:5]}")


if __name__ == "__main__":
    main()
