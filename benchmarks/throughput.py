"""Throughput of the command users run: ``sotopia-are batch`` against an outside
OpenAI-compatible server answering in L seconds (issue #13's measure).

E two-agent episodes of T turns, each rated by the judge at the end (E x (T + 1) model
calls), are played by the CLI in a subprocess, against ``benchmarks/fake_openai_server.py``
in a process of its own (not ``sotopia_are.testing``: an outside server, as a user's vLLM
would be). Each run is a fresh store (``--data-dir`` in a temporary directory). For each
run it reports:

* **wall** time of the whole command (imports, worker start, embedded Redis, summary);
* **CPU**, user + system, of the process tree: the CLI, its worker processes and its
  embedded Redis server, sampled from ``/proc`` every 50 ms (the server's CPU is not
  counted: it stands for the model);
* **calls in flight** at the server: the most at once and the time-weighted mean while
  any was;
* **peak RSS** of the process tree (the sum over its processes, sampled);
* **calls/s** (the server's count over the wall time), and the CPU per call;
* the fake **server's own CPU** (it stands for the model, but it shares the cores), and
  what the sampling cost this script (the same cores);
* the **floors**: the latency bound (T + 1 sequential calls x L, what no concurrency can
  beat), the in-flight bound (calls x L / the mean in flight) and the CPU bound (the
  measured CPU / cores).

Runs: ``defaults`` (``batch`` with no tuning flag), ``tuned`` (``--tuned`` flags, by
default every episode at once), ``litellm`` (the defaults with ``--transport litellm``:
the client the HTTP transport replaces) and ``sotopia``: the same batch played by Sotopia
0.1.5 (``benchmarks/sotopia_throughput_side.py``, their ``run_async_server`` with their
``LLMAgent``s, ``ParallelSotopiaEnv`` and LLM judge) under the Python of a virtualenv of
its own (``--sotopia-python``), timed the same way (its CPU is its one process's: it
stores its episodes as JSON files). With ``sotopia`` among the runs the server answers in
its ``sotopia`` mode (the same answers to every request with a schema, and the judgement
Sotopia's judge asks for in its prompt), and the report gives Sotopia's wall time over
each of our runs'. Runs are one after the other, never at once. ``--sizes`` repeats the
defaults at other batch sizes, to show memory flat in the number of finished episodes.

``--client-cpu`` also times the transports alone, in a child process each:
N requests (200 in flight) of an agent's prompt through ``sotopia_are.llm.transport.send``
over HTTP and through litellm, and the same through ``LLMSession.generate`` (template,
structured output, accounting), reporting CPU per call.

Run: ``python benchmarks/throughput.py [--episodes 1000] [--turns 20] [--latency 0.05]
[--runs defaults,tuned,litellm,sotopia] [--sotopia-python /work/venv-sotopia015/bin/python]
[--sizes 2000] [--client-cpu]``. Record the machine's load (``uptime``) with the numbers:
they are wall-clock measures on a shared machine. Setting up Sotopia: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVER = Path(__file__).resolve().parent / "fake_openai_server.py"
SOTOPIA_SIDE = Path(__file__).resolve().parent / "sotopia_throughput_side.py"
MODEL = "openai/bench-model"
NAMES = ["Ines Moreau", "Kofi Mensah"]
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")
MARKS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.98)
"""When in a run (shares of its wall time) memory is reported."""


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    for name in ("SOTOPIA_ARE_API_KEY", "REDIS_OM_URL", "SOTOPIA_ARE_TRANSPORT"):
        env.pop(name, None)
    return env


# -- the server ---------------------------------------------------------------------------


class Server:
    """The fake server in its own process, answering in mode ``answers`` (its
    ``--answers``; ``seed`` draws its random ones)."""

    def __init__(self, latency: float, answers: str = "schema", seed: int = 0) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), "--latency", str(latency), "--answers", answers,
             "--seed", str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.url = line.split()[-1]

    def stats(self, reset: bool = False) -> dict[str, float]:
        root = self.url.rsplit("/v1", 1)[0]
        if reset:
            request = urllib.request.Request(f"{root}/stats/reset", method="POST", data=b"")
            urllib.request.urlopen(request, timeout=10).read()
            return {}
        with urllib.request.urlopen(f"{root}/stats", timeout=10) as answer:
            stats: dict[str, float] = json.loads(answer.read())
        return stats

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


# -- the process tree ---------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode("latin-1")
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        tree.setdefault(parent, []).append(int(entry))
    return tree


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("latin-1")
    except OSError:
        return ""


def _usage(pid: int, pss: bool) -> tuple[float, float, float] | None:
    """(CPU seconds, RSS MB, PSS MB) of ``pid`` (PSS 0 unless ``pss``: the kernel walks
    the whole address space for it, milliseconds a process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("latin-1")
        fields = stat[stat.rindex(")") + 2 :].split()
        with open(f"/proc/{pid}/statm", "rb") as handle:
            rss_pages = int(handle.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    pss_kb = 0
    if pss:
        with (
            contextlib.suppress(OSError, ValueError),
            open(f"/proc/{pid}/smaps_rollup", "rb") as rollup,
        ):
            for line in rollup:
                if line.startswith(b"Pss:"):
                    pss_kb = int(line.split()[1])
                    break
    cpu = (int(fields[11]) + int(fields[12])) / TICK  # utime + stime
    return cpu, rss_pages * PAGE / 2**20, pss_kb / 1024


@dataclass
class Watch:
    """Samples the process tree of ``root``, and the embedded Redis the run starts in
    ``data_dir`` (a daemon: not in the tree; found by the socket its settings name),
    until stopped: CPU and RSS every ``interval``, the processes themselves every
    ``tree_interval`` and PSS every ``pss_interval`` (finding the processes reads every
    process's ``stat``, and PSS walks each one's memory: done every 50 ms they took 17 %
    of a core, from the same two cores as the run). :attr:`own_cpu_s` is what the
    sampling cost."""

    root: int
    data_dir: str
    interval: float = 0.05
    tree_interval: float = 0.25
    pss_interval: float = 1.0
    own_cpu_s: float = 0.0
    cpu: dict[int, float] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    peak_rss_mb: float = 0.0
    peak_pss_mb: float = 0.0
    peaks: dict[int, float] = field(default_factory=dict)
    samples: list[tuple[float, float]] = field(default_factory=list)
    by_role: list[tuple[float, dict[str, float]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._markers = [self.data_dir]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = time.perf_counter()
        self._thread.start()

    def _pids(self) -> set[int]:
        tree = _children()
        found, todo = set(), [self.root]
        while todo:
            pid = todo.pop()
            if pid in found:
                continue
            found.add(pid)
            todo.extend(tree.get(pid, []))
        if len(self._markers) == 1:
            with contextlib.suppress(OSError, ValueError):
                settings = json.loads(Path(self.data_dir, "redis.db.settings").read_text())
                self._markers.append(str(settings["unixsocket"]))
        for pids in tree.values():
            for pid in pids:
                if pid not in found and any(m in _cmdline(pid) for m in self._markers):
                    found.add(pid)
        return found

    def _run(self) -> None:
        started = time.thread_time()
        pids: set[int] = set()
        next_tree = next_pss = 0.0
        while not self._stop.is_set():
            clock = time.perf_counter()
            if clock >= next_tree:
                pids, next_tree = self._pids(), clock + self.tree_interval
                for pid in pids:  # a spawned process names itself once it has started
                    self.names[pid] = _cmdline(pid) or self.names.get(pid, "")
            pss = clock >= next_pss
            if pss:
                next_pss = clock + self.pss_interval
            total = proportional = 0.0
            roles: dict[str, float] = {}
            for pid in pids:
                usage = _usage(pid, pss)
                if usage is None:
                    continue
                self.cpu[pid] = usage[0]
                self.peaks[pid] = max(self.peaks.get(pid, 0.0), usage[1])
                total += usage[1]
                proportional += usage[2]
                roles[self.role(pid)] = roles.get(self.role(pid), 0.0) + usage[1]
            self.peak_rss_mb = max(self.peak_rss_mb, total)
            self.peak_pss_mb = max(self.peak_pss_mb, proportional)
            now = time.perf_counter() - self._started
            self.samples.append((now, total))
            self.by_role.append((now, roles))
            self._stop.wait(self.interval)
        self.own_cpu_s = time.thread_time() - started

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def rss_over_time(self, role: str) -> list[float]:
        """The RSS (MB, summed over its processes) of ``role`` at each tenth of the run's
        wall time (:data:`MARKS`): flat for a worker whose memory does not grow with the
        episodes it has finished."""
        if not self.by_role:
            return []
        end = self.by_role[-1][0]
        marks = []
        for share in MARKS:
            at = next(roles for when, roles in self.by_role if when >= share * end)
            marks.append(at.get(role, 0.0))
        return marks

    def role(self, pid: int) -> str:
        name = self.names.get(pid, "")
        if "redis" in name:
            return "redis"
        if pid == self.root:
            return "cli"
        # Workers are the CLI's other children: spawned ones name multiprocessing in their
        # command line, forked ones repeat the CLI's.
        return "workers"

    def cpu_by_role(self) -> dict[str, float]:
        roles: dict[str, float] = {}
        for pid, seconds in self.cpu.items():
            roles[self.role(pid)] = roles.get(self.role(pid), 0.0) + seconds
        return roles

    def peak_rss_by_role(self) -> dict[str, float]:
        """The largest RSS any one process of each role reached."""
        roles: dict[str, float] = {}
        for pid, peak in self.peaks.items():
            roles[self.role(pid)] = max(roles.get(self.role(pid), 0.0), peak)
        return roles


# -- a run --------------------------------------------------------------------------------


@dataclass
class Result:
    run: str
    episodes: int
    flags: str
    wall_s: float
    cpu_s: float
    cpu_by_role: dict[str, float]
    server_cpu_s: float
    """The fake server's own CPU over the run (not counted in ``cpu_s``: it stands for the
    model, but it shares the cores)."""
    sampling_cpu_s: float
    """What sampling the processes cost this script (it shares the cores too)."""
    peak_rss_by_role: dict[str, float]
    workers_rss_over_time: list[float]
    redis_rss_over_time: list[float]
    calls: int
    max_in_flight: int
    mean_in_flight: float
    peak_rss_mb: float
    peak_pss_mb: float
    exit_code: int
    load: str
    note: str = ""

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.wall_s

    @property
    def cpu_per_call_ms(self) -> float:
        return self.cpu_s / max(self.calls, 1) * 1000


def write_specs(path: Path, turns: int) -> None:
    spec = {
        "episode_id": "harvest",
        "scenario": "Two allotment neighbours divide a shared apple harvest.",
        "agent_names": NAMES,
        "agent_backgrounds": ["Ines bakes pies for the market.", "Kofi presses cider."],
        "agent_goals": ["Get at least 60% of the apples.", "Get the windfalls for cider."],
        "max_turns": turns,
        "max_stale_turns": turns,
    }
    path.write_text(json.dumps(spec) + "\n")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure(
    name: str, episodes: int, flags: str, command: list[str], env: dict[str, str],
    server: Server, work: Path, marker: str, log: Path,
) -> Result:  # fmt: skip
    """Runs ``command`` (in ``work``) to its end, sampling its process tree and the
    processes whose command line names ``marker`` (see ``Watch``)."""
    server.stats(reset=True)
    before = load()
    with open(log, "w") as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=work)
        watch = Watch(process.pid, marker)
        code = process.wait()
        wall = time.perf_counter() - started
        watch.stop()
    stats = server.stats()
    if code:
        tail = log.read_text().splitlines()[-15:]
        print(f"{name}: exit code {code}\n" + "\n".join(tail), file=sys.stderr)
    roles = watch.cpu_by_role()
    return Result(
        run=name,
        episodes=episodes,
        flags=flags,
        wall_s=wall,
        cpu_s=sum(roles.values()),
        cpu_by_role=roles,
        server_cpu_s=stats["cpu_s"],
        sampling_cpu_s=watch.own_cpu_s,
        peak_rss_by_role=watch.peak_rss_by_role(),
        workers_rss_over_time=watch.rss_over_time("workers"),
        redis_rss_over_time=watch.rss_over_time("redis"),
        calls=int(stats["requests"]),
        max_in_flight=int(stats["max_in_flight"]),
        mean_in_flight=stats["mean_in_flight"],
        peak_rss_mb=watch.peak_rss_mb,
        peak_pss_mb=watch.peak_pss_mb,
        exit_code=code,
        load=f"{before} → {load()}",
    )


def run_batch(
    name: str, flags: list[str], server: Server, episodes: int, turns: int, keep: Path | None
) -> Result:
    with tempfile.TemporaryDirectory(prefix="throughput-") as scratch:
        work = Path(scratch)
        specs = work / "specs.jsonl"
        write_specs(specs, turns)
        data = work / "data"
        command = [
            sys.executable, "-m", "sotopia_are", "batch", str(specs), "-n", str(episodes),
            "--model", MODEL, "--api-base", server.url, "--data-dir", str(data),
            "--tag", f"bench-{name}", *flags,
        ]  # fmt: skip
        log = (keep or work) / f"{name}-{episodes}.log"
        return measure(
            name, episodes, " ".join(flags), command, environment(), server, work, str(data), log
        )


def run_sotopia(
    python: Path, their_logs: bool, server: Server, episodes: int, turns: int, keep: Path | None
) -> Result:
    """The same batch played by Sotopia (``sotopia_throughput_side.py`` under ``python``),
    storing its episodes in their local JSON store under a temporary ``HOME``."""
    with tempfile.TemporaryDirectory(prefix="throughput-sotopia-") as scratch:
        work = Path(scratch)
        home = work / "home"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "REDIS_OM_URL")}
        env.update(
            HOME=str(home),
            SOTOPIA_STORAGE_BACKEND="local",  # theirs: JSON files, no Redis (see the side)
            LITELLM_LOCAL_MODEL_COST_MAP="True",  # no network fetch of litellm's price list
            CUSTOM_API_KEY="sk-bench",
        )
        flags = ["--their-logs"] if their_logs else []
        command = [
            str(python), str(SOTOPIA_SIDE), "--api-base", server.url,
            "--episodes", str(episodes), "--turns", str(turns), "--tag", "bench-sotopia",
            *flags,
        ]  # fmt: skip
        log = (keep or work) / f"sotopia-{episodes}.log"
        result = measure(
            "sotopia", episodes, " ".join(flags), command, env, server, work, str(home), log
        )
        lines = [line for line in log.read_text().splitlines() if line.startswith("{")]
        if lines:
            side = json.loads(lines[-1])
            logs, judged = sotopia_logs(home, "bench-sotopia")
            result.note = (
                f"Sotopia {side['sotopia']}: {side['episodes']} episodes, {logs} stored, "
                f"{judged} judged, {side['spoken_turns']} spoken turns; seconds in setting up "
                f"{side['setup_s']:.1f}, episodes {side['episodes_s']:.1f}, stopping litellm's "
                f"logging worker {side['stop_s']:.1f} ({side['logging_dropped']} logging "
                f"callbacks dropped), from imports to the end {side['wall_s']:.1f}"
            )
        return result


def sotopia_logs(home: Path, tag: str) -> tuple[int, int]:
    """(Sotopia's episode logs stored with ``tag`` under ``home``, of which judged): their
    local store keeps one JSON file per ``EpisodeLog``, whose reasoning holds the judge's
    per-agent comments (their judge swallows a failure and adds none)."""
    logs = judged = 0
    for path in (home / ".sotopia" / "data" / "EpisodeLog").glob("*.json"):
        record = json.loads(path.read_text())
        if record.get("tag") == tag:
            logs += 1
            judged += "Agent 1 comments" in str(record.get("reasoning", ""))
    return logs, judged


# -- the transports alone -----------------------------------------------------------------


def client_cpu_child(url: str, transport: str, level: str, calls: int, in_flight: int) -> None:
    """In a child process: CPU per call of ``transport`` at ``level`` (``send`` or
    ``generate``), after a warm-up; prints one JSON line."""
    sys.path.insert(0, str(ROOT))
    from pydantic import BaseModel

    from sotopia_are.llm import LLMConfig, LLMSession, RetryPolicy
    from sotopia_are.llm.request import LLMRequest, Message
    from sotopia_are.llm.structured import response_format_for
    from sotopia_are.llm.transport import send
    from sotopia_are.messages import AgentAction

    class Said(BaseModel):
        action_type: str
        argument: str

    config = LLMConfig(
        api_base=url, api_key="sk-bench", transport=transport,  # type: ignore[arg-type]
        max_concurrency=in_flight, timeout_s=60, retry=RetryPolicy(max_attempts=1),
    )  # fmt: skip
    endpoint = config.endpoint(MODEL)
    said = 'Ines said: "Half the apples for the pies?"'
    history = "\n".join(f"Turn #{n}: {said}" for n in range(20))
    prompt = f"You are Ines Moreau. Scenario: an apple harvest.\n{history}\nYour turn."
    schema = response_format_for("json_schema", AgentAction)
    request = LLMRequest(
        model=MODEL,
        messages=(
            Message(role="system", content="You play a character."),
            Message(role="user", content=prompt),
        ),
        params={"max_tokens": 256, "response_format": schema},
    )
    session = LLMSession(config, retain_calls=False)

    async def one() -> None:
        if level == "send":
            await send(request, endpoint, 60)
        else:
            await session.generate(MODEL, "llm/repair.j2", {"error": prompt, "schema": "{}"}, Said)

    async def main() -> float:
        gate = asyncio.Semaphore(in_flight)

        async def gated() -> None:
            async with gate:
                await one()

        await asyncio.gather(*(gated() for _ in range(in_flight)))  # warm-up
        began = time.process_time()
        await asyncio.gather(*(gated() for _ in range(calls)))
        return time.process_time() - began

    cpu = asyncio.run(main())
    print(json.dumps({"transport": transport, "level": level, "cpu_ms": cpu / calls * 1000}))


def client_cpu(url: str, calls: int) -> list[dict[str, float]]:
    rows = []
    for level in ("send", "generate"):
        for transport in ("http", "litellm"):
            done = subprocess.run(
                [sys.executable, __file__, "--client-child", url, transport, level, str(calls)],
                capture_output=True, text=True, env=environment(), check=True,
            )  # fmt: skip
            rows.append(json.loads(done.stdout.splitlines()[-1]))
    return rows


# -- main ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--runs", default="defaults,tuned,litellm", help="also: sotopia")
    parser.add_argument(
        "--sotopia-python", type=Path, default=Path("/work/venv-sotopia015/bin/python"),
        help="the Python of a virtualenv with Sotopia 0.1.5 (docs/benchmarks.md)",
    )  # fmt: skip
    parser.add_argument(
        "--sotopia-logs", action="store_true", help="keep Sotopia's console log (per call)"
    )
    parser.add_argument("--tuned", default="", help="the tuned run's flags (default: all at once)")
    parser.add_argument("--sizes", default="", help="more batch sizes for the defaults, e.g. 2000")
    parser.add_argument("--client-cpu", action="store_true")
    parser.add_argument("--client-calls", type=int, default=3000)
    parser.add_argument("--keep-logs", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--client-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client_child:
        url, transport, level, calls = args.client_child
        client_cpu_child(url, transport, level, int(calls), 200)
        return
    cores = os.cpu_count() or 1
    tuned = shlex.split(args.tuned) if args.tuned else ["--concurrency", str(args.episodes)]
    flags = {"defaults": [], "tuned": tuned, "litellm": ["--transport", "litellm"]}
    runs = args.runs.split(",")
    if "sotopia" in runs and not args.sotopia_python.exists():
        raise SystemExit(f"no {args.sotopia_python}: set up Sotopia as docs/benchmarks.md says")
    server = Server(args.latency, "sotopia" if "sotopia" in runs else "schema")
    results: list[Result] = []
    clients: list[dict[str, float]] = []
    try:
        print(f"server {server.url}; {cores} cores; load {load()}", flush=True)
        if args.client_cpu:
            clients = client_cpu(server.url, args.client_calls)
        for name in runs:
            if name == "sotopia":
                result = run_sotopia(
                    args.sotopia_python, args.sotopia_logs, server, args.episodes, args.turns,
                    args.keep_logs,
                )  # fmt: skip
                results.append(result)
            else:
                results.append(
                    run_batch(name, flags[name], server, args.episodes, args.turns, args.keep_logs)
                )
            print(json.dumps({**asdict(results[-1])}), flush=True)
        for size in filter(None, args.sizes.split(",")):
            results.append(run_batch("defaults", [], server, int(size), args.turns, args.keep_logs))
            print(json.dumps({**asdict(results[-1])}), flush=True)
    finally:
        server.stop()
    calls = args.episodes * (args.turns + 1)
    print()
    print(
        f"{args.episodes} two-agent episodes x {args.turns} turns + judge = {calls} calls, "
        f"server latency {args.latency * 1000:.0f} ms, {cores} cores"
    )
    print(
        f"latency floor: {args.turns + 1} sequential calls x {args.latency * 1000:.0f} ms = "
        f"{(args.turns + 1) * args.latency:.2f} s"
    )
    print()
    print(
        "| run | episodes | wall (s) | CPU (s) | CPU per call (ms) | calls/s | in flight "
        "(max / mean) | peak RSS / PSS (MB) | in-flight floor (s) | CPU floor (s) "
        "| server CPU (s) | sampling CPU (s) | load |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        flight_floor = r.calls * args.latency / max(r.mean_in_flight, 1e-9)
        name = f"{r.run} `{r.flags}`" if r.flags else r.run
        print(
            f"| {name} | {r.episodes} | {r.wall_s:.1f} | {r.cpu_s:.1f} | {r.cpu_per_call_ms:.2f} "
            f"| {r.calls_per_s:.0f} | {r.max_in_flight} / {r.mean_in_flight:.0f} "
            f"| {r.peak_rss_mb:.0f} / {r.peak_pss_mb:.0f} | {flight_floor:.1f} "
            f"| {r.cpu_s / cores:.1f} | {r.server_cpu_s:.1f} | {r.sampling_cpu_s:.1f} "
            f"| {r.load} |"
        )
    for r in results:
        roles = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(r.cpu_by_role.items()))
        peaks = ", ".join(f"{k} {v:.0f} MB" for k, v in sorted(r.peak_rss_by_role.items()))
        print(f"- {r.run} ({r.episodes}): CPU by process: {roles}; peak RSS of one: {peaks}")
        if r.run != "sotopia":  # Sotopia is one process (the tree's root: "cli" here)
            workers = " / ".join(f"{mb:.0f}" for mb in r.workers_rss_over_time)
            redis = " / ".join(f"{mb:.0f}" for mb in r.redis_rss_over_time)
            marks = " / ".join(f"{share:.0%}" for share in MARKS)
            print(f"  RSS at {marks} of the run (MB): workers {workers}; redis {redis}")
        expected = r.episodes * (args.turns + 1)
        print(f"  model calls counted at the server: {r.calls} (E x (T + 1) = {expected})")
        if r.note:
            print(f"  {r.note}")
    theirs = [r for r in results if r.run == "sotopia"]
    for sotopia in theirs:
        for ours in results:
            if ours.run != "sotopia" and ours.episodes == sotopia.episodes:
                print(
                    f"- Sotopia's wall time over ours ({ours.run}): {sotopia.wall_s:.1f} s / "
                    f"{ours.wall_s:.1f} s = {sotopia.wall_s / ours.wall_s:.1f}x; CPU "
                    f"{sotopia.cpu_s:.1f} s / {ours.cpu_s:.1f} s = "
                    f"{sotopia.cpu_s / max(ours.cpu_s, 1e-9):.1f}x"
                )
    if clients:
        print()
        print("| client | level | CPU per call (ms) |")
        print("|---|---|---:|")
        for row in clients:
            print(f"| {row['transport']} | {row['level']} | {row['cpu_ms']:.3f} |")
    if args.json is not None:
        rows = [asdict(r) for r in results] + clients
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
