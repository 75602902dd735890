"""Does ``sotopia-are batch`` keep a llama.cpp server's decoding slots busy? (issue #30)

Starts llama.cpp's server with ``--parallel N`` slots through the real-model harness
(``../shared/tools/real_model/serve.sh``; or uses ``--api-base``), runs ``sotopia-are
batch`` with its default flags (only the model, the server, a fresh store, a tag and
``--max-turns`` given) on E episodes of ``examples/scenarios/`` (judged, the default
rubric), and meanwhile reads the server's own endpoints:

* ``/slots`` every 100 ms: which slots are processing (a prompt or a reply);
* ``/metrics`` every second: ``llamacpp:tokens_predicted_total`` and the requests it
  defers (queued for a slot);
* the store every second: how many episodes still have work (not failed, not rated).

**Utilisation once warm** is, per slot, the fraction of the 100 ms samples in which it was
processing, over the window from the server's first answer (its count of generated tokens
growing) to the moment fewer than N episodes still had work (from then on some slot must
idle, whatever the client does).

**The batch's tokens/s** are the completion tokens its stored calls (agents' and judge's)
record, over the time the server was working for it (its first busy sample to its last),
and ``tokens_predicted_total``'s growth over the warm window. **The server's own figure
for the same load**: the batch's requests (each call's first request, as stored: messages
and parameters, ``response_format`` included) sent again straight to the server with
exactly N in flight (no sotopia_are), for up to ``--raw-seconds``; its completion
tokens/s and its own slot utilisation.

Timeouts and retries are counted from the stored calls' attempts (a failed attempt of
kind ``transient`` is a timeout or a 5xx/429 retried). ``--log-limits`` writes the
endpoint limit's changes (logger ``sotopia_are.llm.concurrency``, debug) of every
process of the batch to a file, through a ``sitecustomize`` on the batch's
``PYTHONPATH``.

Run (about 4 minutes at N=2, 8 at N=4 with the 0.5B model on 2 cores)::

    python benchmarks/slots.py --parallel 2 [--episodes 6] [--max-turns 4] \\
        [--model-file 0.5b] [--threads 2] [--ctx-per-slot 4096] [--raw-seconds 120] \\
        [--api-base http://127.0.0.1:8089/v1 --model openai/qwen05] [--json out.json]

Record ``uptime`` with the numbers: the machine is shared; utilisation is what counts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "examples" / "scenarios"
SERVE = ROOT.parent / "shared" / "tools" / "real_model" / "serve.sh"
ALIAS = "slots"

_SITECUSTOMIZE = """\
import logging, os
_handler = logging.FileHandler(os.environ["SLOTS_LIMIT_LOG"])
_handler.setFormatter(logging.Formatter("%(created).3f %(process)d %(message)s"))
_logger = logging.getLogger("sotopia_are.llm.concurrency")
_logger.addHandler(_handler)
_logger.setLevel(logging.DEBUG)
"""


def _get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        data: bytes = reply.read()
        return data


def _metrics(root: str) -> dict[str, float]:
    found = {}
    for line in _get(f"{root}/metrics").decode().splitlines():
        if line.startswith("llamacpp:"):
            name, _, value = line.partition(" ")
            found[name.removeprefix("llamacpp:")] = float(value)
    return found


class Server:
    """llama.cpp's server through the harness, stopped (by its pid) on exit."""

    def __init__(self, port: int, parallel: int, args: argparse.Namespace, log: Path) -> None:
        command = [
            str(SERVE),
            str(port),
            ALIAS,
            "--model",
            args.model_file,
            "--threads",
            str(args.threads),
            "--parallel",
            str(parallel),
            "--ctx",
            str(args.ctx_per_slot * parallel),
        ]
        self.log = log.open("w")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.log, text=True)
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("READY"):
                print(line.strip(), flush=True)
                break
        else:
            raise SystemExit(f"the server did not start: see {log}")
        self.api_base = f"http://127.0.0.1:{port}/v1"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


class Watcher(threading.Thread):
    """Samples ``/slots`` every 100 ms; ``/metrics`` and the store every second."""

    def __init__(self, root: str, data_dir: Path | None, tag: str | None) -> None:
        super().__init__(daemon=True)
        self.root, self.data_dir, self.tag = root, data_dir, tag
        self.slots: list[tuple[float, tuple[bool, ...]]] = []
        self.decoded: dict[tuple[int, int], list[tuple[float, int]]] = {}  # (slot, task)
        self.metrics: list[tuple[float, dict[str, float]]] = []
        self.pending: list[tuple[float, int]] = []  # episodes with work left
        self.halt = threading.Event()

    def run(self) -> None:
        store = None
        next_slow = 0.0
        while not self.halt.is_set():
            now = time.monotonic()
            with contextlib.suppress(OSError, ValueError):
                states = json.loads(_get(f"{self.root}/slots"))
                self.slots.append((now, tuple(bool(s["is_processing"]) for s in states)))
                for state in states:
                    if state.get("is_processing") and state.get("next_token"):
                        task = (int(state["id"]), int(state.get("id_task", -1)))
                        done = int(state["next_token"][0].get("n_decoded", 0))
                        self.decoded.setdefault(task, []).append((now, done))
            if now >= next_slow:
                next_slow = now + 1.0
                with contextlib.suppress(OSError, ValueError):
                    self.metrics.append((now, _metrics(self.root)))
                # The batch has started its store (the AOF is made as the server starts).
                if self.data_dir is not None and (self.data_dir / "appendonly.aof").exists():
                    with contextlib.suppress(Exception):
                        if store is None:
                            import sotopia_are as sa

                            store = sa.connect(data_dir=self.data_dir)
                        summaries = store.summaries(tag=self.tag)
                        left = sum(
                            s.status not in ("failed",) and not s.verdict_count for s in summaries
                        )
                        self.pending.append((now, left))
            self.halt.wait(max(0.0, now + 0.1 - time.monotonic()))
        if store is not None:
            store.close()


def utilisation(
    samples: list[tuple[float, tuple[bool, ...]]], start: float, end: float
) -> list[float]:
    """Each slot's share of [start, end] spent processing, each sample standing for the
    time until the next (the server answers ``/slots`` late when it is busy)."""
    inside = [(t, busy) for t, busy in samples if start <= t <= end]
    if len(inside) < 2:
        return []
    total = inside[-1][0] - inside[0][0]
    shares = [0.0] * len(inside[0][1])
    for (t, busy), (later, _) in itertools.pairwise(inside):
        for slot, working in enumerate(busy):
            shares[slot] += (later - t) * working
    return [share / total for share in shares]


def first_answer(metrics: list[tuple[float, dict[str, float]]], after_t: float) -> float | None:
    """When the server first finished a request after ``after_t`` (its count of generated
    tokens grew): its first answer to the episodes, not to the preflight before them. (A
    slot going idle is no sign: the next request takes it within milliseconds.)"""
    before = counter_at(metrics, after_t, "tokens_predicted_total")
    for t, found in metrics:
        if t > after_t and found.get("tokens_predicted_total", 0.0) > before:
            return t
    return None


def counter_at(metrics: list[tuple[float, dict[str, float]]], when: float, name: str) -> float:
    """The last reading of counter ``name`` at or before ``when`` (0 before any)."""
    value = 0.0
    for t, found in metrics:
        if t > when:
            break
        value = found.get(name, value)
    return value


def decoded_between(
    decoded: dict[tuple[int, int], list[tuple[float, int]]], start: float, end: float
) -> int:
    """Tokens the slots generated between ``start`` and ``end``, from ``/slots``'
    ``n_decoded`` of each request in progress (the last ~100 ms of each is missed)."""
    total = 0
    for readings in decoded.values():
        at_start = max((n for t, n in readings if t <= start), default=0)
        at_end = max((n for t, n in readings if t <= end), default=0)
        total += max(0, at_end - at_start)
    return total


def batch_calls(data_dir: Path, tag: str) -> list[Any]:
    """Every stored call of the batch: the agents' and the judges'."""
    import sotopia_are as sa

    store = sa.connect(data_dir=data_dir)
    try:
        calls = []
        for episode_id in store.episode_ids(tag=tag):
            record = store.load(episode_id)
            calls += record.calls
            for verdict in record.verdicts:
                calls += verdict.evaluation.calls
        return calls
    finally:
        store.close()


async def replay_raw(
    api_base: str, model: str, calls: list[Any], parallel: int, seconds: float
) -> dict[str, Any]:
    """The calls' first requests sent again straight to the server, ``parallel`` at once,
    for at most ``seconds``: completion tokens over wall time."""
    import aiohttp

    bodies = []
    for call in calls:
        if not call.ok and not call.attempts:
            continue
        body = {
            "model": model.removeprefix("openai/"),
            "messages": [m.model_dump(mode="json") for m in call.messages],
            **call.params,
        }
        bodies.append(body)
    queue = list(reversed(bodies))
    tokens = answered = failed = 0
    started = time.monotonic()
    deadline = started + seconds

    async def worker(client: aiohttp.ClientSession) -> None:
        nonlocal tokens, answered, failed
        while queue and time.monotonic() < deadline:
            body = queue.pop()
            async with client.post(f"{api_base}/chat/completions", json=body) as reply:
                data = await reply.json()
            if reply.status != 200:
                failed += 1
                continue
            answered += 1
            tokens += data["usage"]["completion_tokens"]

    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(timeout=timeout) as client:
        workers = asyncio.gather(*(worker(client) for _ in range(parallel)))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(workers, seconds)
    wall = time.monotonic() - started
    return {
        "requests": answered,
        "failed": failed,
        "of": len(bodies),
        "completion_tokens": tokens,
        "seconds": round(wall, 1),
        "tokens_per_s": round(tokens / wall, 2) if wall else 0.0,
    }


def specs_file(directory: Path, episodes: int) -> Path:
    """``episodes`` specs cycling through the example scenarios."""
    bases = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(SCENARIOS.glob("*.json"))]
    path = directory / "specs.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for number in range(episodes):
            base = bases[number % len(bases)]
            out.write(json.dumps({**base, "episode_id": f"slots-{number}"}) + "\n")
    return path


def run(args: argparse.Namespace, parallel: int, work: Path) -> dict[str, Any]:
    server = None
    api_base, model = args.api_base, args.model
    if api_base is None:
        server = Server(args.port, parallel, args, work / f"server{parallel}.log")
        api_base, model = server.api_base, f"openai/{ALIAS}"
    root = api_base.removesuffix("/v1")
    try:
        props = json.loads(_get(f"{root}/props"))
        slots = int(props.get("total_slots", parallel))
        episodes = args.episodes or 3 * slots
        data_dir = work / f"store{slots}"
        tag = f"slots{slots}"
        specs = specs_file(work, episodes)
        command = [
            sys.executable,
            "-m",
            "sotopia_are",
            "batch",
            str(specs),
            "--model",
            model,
            "--api-base",
            api_base,
            "--tag",
            tag,
            "--data-dir",
            str(data_dir),
            "--max-turns",
            str(args.max_turns),
        ]
        env = dict(os.environ)
        limit_log = None
        if args.log_limits:
            custom = work / "sitecustomize"
            custom.mkdir(exist_ok=True)
            (custom / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
            limit_log = work / f"limits{slots}.log"
            env["SLOTS_LIMIT_LOG"] = str(limit_log)
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(custom), env.get("PYTHONPATH", "")) if p
            )
        watcher = Watcher(root, data_dir, tag)
        watcher.start()
        load_before = os.getloadavg()
        started = time.monotonic()
        batch = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        wall = time.monotonic() - started
        time.sleep(0.5)
        watcher.halt.set()
        watcher.join()
        load_after = os.getloadavg()
        (work / f"batch{slots}.out").write_text(batch.stdout + batch.stderr, encoding="utf-8")

        samples = watcher.slots
        busy_times = [t for t, b in samples if any(b)]
        stored = next((t for t, left in watcher.pending if left), None)
        warm = first_answer(watcher.metrics, stored) if stored is not None else None
        short = next(
            (t for t, left in watcher.pending if stored and t > stored and left < slots), None
        )
        end = short if short is not None else (busy_times[-1] if busy_times else started)
        window = (end - warm) if warm is not None else 0.0
        per_slot = utilisation(samples, warm, end) if warm is not None else []

        calls = batch_calls(data_dir, tag)
        attempts = [a for c in calls for a in c.attempts]
        completion = sum(c.completion_tokens or 0 for c in calls)
        active = (busy_times[-1] - busy_times[0]) if busy_times else 0.0
        predicted = "tokens_predicted_total"
        in_window = (
            counter_at(watcher.metrics, end, predicted)
            - counter_at(watcher.metrics, warm, predicted)
            if warm is not None
            else 0.0
        )
        latencies = [a.latency_s for a in attempts if a.raw_text is not None]
        services = [a.service_s for a in attempts if a.service_s]
        queued = [a.queued_s for a in attempts]
        result: dict[str, Any] = {
            "slots": slots,
            "episodes": episodes,
            "max_turns": args.max_turns,
            "exit": batch.returncode,
            "wall_s": round(wall, 1),
            "warm_window_s": round(window, 1),
            "utilisation_once_warm": [round(u, 3) for u in per_slot],
            "utilisation_all_busy_span": [
                round(u, 3)
                for u in utilisation(samples, busy_times[0], busy_times[-1])
                if busy_times
            ],
            "calls": len(calls),
            "failed_calls": sum(not c.ok for c in calls),
            "requests": len(attempts),
            "timeouts_or_retries": sum(a.error_kind == "transient" for a in attempts),
            "invalid_answers_asked_again": sum(a.error_kind == "invalid_output" for a in attempts),
            "completion_tokens": completion,
            "batch_tokens_per_s": round(completion / active, 2) if active else 0.0,
            "server_tokens_per_s_in_window": (
                round(decoded_between(watcher.decoded, warm, end) / window, 2)
                if warm is not None and window > 0
                else 0.0
            ),
            "server_finished_tokens_per_s_in_window": (
                round(in_window / window, 2) if window > 0 else 0.0
            ),
            "server_predicted_tokens_seconds": (
                watcher.metrics[-1][1].get("predicted_tokens_seconds") if watcher.metrics else None
            ),
            "latency_s_median": round(statistics.median(latencies), 1) if latencies else None,
            "service_s_median": round(statistics.median(services), 1) if services else None,
            "queued_s_median": round(statistics.median(queued), 1) if queued else None,
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in load_after],
            "command": " ".join(command[2:]),
            "batch_tail": (batch.stdout + batch.stderr).strip().splitlines()[-6:],
        }
        if limit_log is not None and limit_log.exists():
            result["limit_log"] = str(limit_log)
        print(json.dumps(result, indent=2), flush=True)
        if args.raw_seconds > 0:
            raw_watch = Watcher(root, None, None)
            raw_watch.start()
            raw = asyncio.run(replay_raw(api_base, model, calls, slots, args.raw_seconds))
            raw_watch.halt.set()
            raw_watch.join()
            span = [t for t, b in raw_watch.slots if any(b)]
            if len(span) > 1:
                generated = decoded_between(raw_watch.decoded, span[0], span[-1])
                raw["server_tokens_per_s"] = round(generated / (span[-1] - span[0]), 2)
                raw["utilisation"] = [
                    round(u, 3) for u in utilisation(raw_watch.slots, span[0], span[-1])
                ]
            result["raw_at_same_load"] = raw
            print(json.dumps({"raw_at_same_load": raw}), flush=True)
        return result
    finally:
        if server is not None:
            server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parallel", type=int, action="append", help="slots (repeatable)")
    parser.add_argument("--api-base", default=None, help="use this server instead of starting one")
    parser.add_argument("--model", default=f"openai/{ALIAS}", help="the model, with --api-base")
    parser.add_argument("--model-file", default="0.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx-per-slot", type=int, default=4096)
    parser.add_argument("--port", type=int, default=8093)
    parser.add_argument("--episodes", type=int, default=0, help="default: 3 x the slots")
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--raw-seconds", type=float, default=120.0)
    parser.add_argument("--log-limits", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    # Stopped with SIGTERM, still stop the server it started (the `finally` in run()).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="slots-"))
    print(f"working in {work}", flush=True)
    results = []
    try:
        for parallel in args.parallel or [2]:
            results.append(run(args, parallel, work))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0 if all(r["exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
