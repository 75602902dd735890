"""Concurrent social episodes: E two-agent episodes x T turns of LLMAgent against a local
OpenAI-compatible server that answers every request after L seconds.

Three runs of the same E episodes:

* **network** — real HTTP through litellm to the test server (in a subprocess, so its
  CPU is not counted here). Reports wall time against the lower bound (the longest chain
  of sequential calls x L = T x L, since an episode's turns are sequential), process CPU
  time and the peak resident memory of the run.
* **cached** — the same requests answered by the LLM layer's response cache: everything
  but the HTTP client (runner, kernel, views, LLMAgent, prompt rendering, output
  validation, accounting). Its CPU per turn is the framework overhead; network CPU minus
  cached CPU is the HTTP client's own CPU time.
* **runner only** — an agent that answers at once: the social runner and the kernel alone.

Each run is a child process (after a one-episode warm-up), so its peak RSS is its own;
"RSS before" is the resident size after imports and warm-up.

With ``--workers N`` (N > 1) the network run is repeated with the episodes split across N
processes started together, as ``sotopia-are batch --workers N`` splits a batch, and the
speed-up over one process is reported: one process is bound by the HTTP client's CPU.

Run: ``python benchmarks/episodes.py [--episodes 1000] [--turns 20] [--latency 0.05]
[--workers N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from sotopia_are.agents import llm_agents_for
from sotopia_are.llm import LLMConfig, LLMSession, ResponseCache, RetryPolicy
from sotopia_are.messages import AgentAction
from sotopia_are.social import AgentTurn, CallRecord, EpisodeSpec, SocialAgent, run_episodes

MODEL = "openai/test-model"
NAMES = ["Ines Moreau", "Kofi Mensah"]
REPLY = {"action_type": "speak", "argument": "Let us split the harvest fairly, half each."}


def specs(count: int, turns: int) -> list[EpisodeSpec]:
    return [
        EpisodeSpec(
            episode_id=f"bench-{index}",
            scenario="Two allotment neighbours divide a shared apple harvest.",
            agent_names=NAMES,
            agent_backgrounds=["Ines bakes pies for the market.", "Kofi presses cider."],
            agent_goals=["Get at least 60% of the apples.", "Get the windfalls for cider."],
            max_turns=turns,
            max_stale_turns=turns,
        )
        for index in range(count)
    ]


class InstantAgent:
    """Answers at once with a fixed action (no model)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._action = AgentAction.model_validate(REPLY)

    @property
    def name(self) -> str:
        return self._name

    async def act(self, turn: AgentTurn) -> AgentAction:
        return self._action

    def call_records(self) -> Sequence[CallRecord]:
        return ()


@dataclass
class Run:
    name: str
    wall_s: float
    cpu_s: float
    turns: int
    peak_rss_mb: float
    base_rss_mb: float


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(
    name: str,
    episode_specs: list[EpisodeSpec],
    make_agents: Callable[[EpisodeSpec], Sequence[SocialAgent]],
) -> Run:
    gc.collect()
    base = rss_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    results = asyncio.run(
        run_episodes(episode_specs, make_agents, max_concurrent=len(episode_specs))
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    failed = [r for r in results if r.status != "complete"]
    if failed:
        raise SystemExit(f"{name}: {len(failed)} episodes failed, e.g. {failed[0].reason}")
    turns = sum(r.turns_played for r in results)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return Run(name, wall, cpu, turns, peak, base)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sotopia_are.testing",
            "--port",
            str(port),
            "--latency",
            str(latency),
            "--reply",
            json.dumps(REPLY),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    server.stdout.readline()  # the "serving at" line: the port is bound
    return server, f"http://127.0.0.1:{port}/v1"


PHASES = ("network", "cached", "runner only")


def run_phase(phase: str, url: str, episodes: int, turns: int) -> Run:
    """One timed run, after a one-episode warm-up (imports, litellm's first-call setup)
    whose answers also fill the cache of the cached run."""
    config = LLMConfig(
        api_base=url,
        api_key="sk-bench",
        timeout_s=300,
        max_concurrency=max(episodes, 1),
        retry=RetryPolicy(max_attempts=1),
    )
    cache = ResponseCache()
    warm = LLMSession(config, cache=cache)
    measure("warm-up", specs(1, turns), lambda s: llm_agents_for(s, MODEL, warm))
    session = LLMSession(config, cache=cache if phase == "cached" else None)
    make_agents: Callable[[EpisodeSpec], Sequence[SocialAgent]] = (
        (lambda s: [InstantAgent(n) for n in NAMES])
        if phase == "runner only"
        else (lambda s: llm_agents_for(s, MODEL, session))
    )
    return measure(phase, specs(episodes, turns), make_agents)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=1, help="also split across N processes")
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase is not None:
        # A child process: one run, so its peak memory is its own.
        print(json.dumps(asdict(run_phase(args.phase, args.url, args.episodes, args.turns))))
        return
    server, url = start_server(args.latency)
    runs: dict[str, Run] = {}

    def child(phase: str, episodes: int) -> subprocess.Popen[str]:
        command = [sys.executable, __file__, f"--episodes={episodes}", f"--turns={args.turns}"]
        return subprocess.Popen(
            [*command, f"--phase={phase}", f"--url={url}"], stdout=subprocess.PIPE, text=True
        )

    def result(process: subprocess.Popen[str]) -> Run:
        out, _ = process.communicate()
        if process.returncode:
            raise SystemExit(f"a benchmark child failed with exit code {process.returncode}")
        return Run(**json.loads(out.splitlines()[-1]))

    split: list[Run] = []
    try:
        for phase in PHASES:
            runs[phase] = result(child(phase, args.episodes))
        if args.workers > 1:
            shares = [len(range(i, args.episodes, args.workers)) for i in range(args.workers)]
            split = [result(p) for p in [child("network", n) for n in shares if n]]
    finally:
        server.terminate()
        server.wait()
    net, cached, runner = runs["network"], runs["cached"], runs["runner only"]
    lower_bound = args.turns * args.latency
    client_cpu = max(net.cpu_s - cached.cpu_s, 0.0)
    target = 1.5 * lower_bound + client_cpu
    print(
        f"{args.episodes} episodes x {args.turns} turns, 2 agents, L = {args.latency * 1000:.0f} ms"
    )
    print(f"lower bound {lower_bound:.2f} s; HTTP client CPU {client_cpu:.2f} s")
    print(f"target: wall <= 1.5 x lower bound + client CPU = {target:.2f} s")
    print("| run | wall (s) | CPU (s) | CPU per turn (ms) | peak RSS (MB) | RSS before (MB) |")
    print("|---|---:|---:|---:|---:|---:|")
    for run in (net, cached, runner):
        print(
            f"| {run.name} | {run.wall_s:.2f} | {run.cpu_s:.2f} | "
            f"{run.cpu_s / run.turns * 1000:.3f} | {run.peak_rss_mb:.0f} | {run.base_rss_mb:.0f} |"
        )
    verdict = "meets" if net.wall_s <= target else "misses"
    print(f"network wall {net.wall_s:.2f} s {verdict} the target {target:.2f} s")
    framework = cached.cpu_s / cached.turns * 1000
    print(f"framework overhead {framework:.3f} ms per turn (target < 1 ms)")
    if split:
        # The processes start together; each times its own run after its warm-up.
        wall = max(run.wall_s for run in split)
        calls = sum(run.turns for run in split)
        print(
            f"network in {len(split)} processes: wall {wall:.2f} s, {calls / wall:.0f} calls/s "
            f"vs {net.turns / net.wall_s:.0f} calls/s in one: speed-up {net.wall_s / wall:.2f}x"
        )


if __name__ == "__main__":
    main()
