"""Werewolf, ours and Sotopia's, against the same outside fake server (issue #28, item 8).

Each side plays G games against ``benchmarks/fake_openai_server.py`` (a process of its own,
answering every call after L seconds, default 50 ms as in ``throughput.py``), in a
subprocess whose process tree is sampled from ``/proc`` with ``throughput.py``'s ``Watch``:

* **Sotopia**: their ``WerewolfEnv`` (the ``examples/experimental/werewolves`` example of a
  Sotopia source tree, 6 players, or 7 with ``--players 7``) played by
  ``benchmarks/sotopia_werewolf_game.py`` under the Python of a separate virtualenv that
  has Sotopia installed (``--sotopia-python``), all G games at once as their
  ``run_async_server`` gathers episodes (``--sotopia-concurrency`` bounds them). The
  server answers in its ``sotopia-werewolf`` mode: a random legal command (``vote NAME``,
  ``kill NAME``, ...) where Sotopia's prompt asks for one, since their schema cannot say
  what is legal.
* **ours**: ``sotopia-are batch examples/games/werewolf.json -n G --model
  openai/bench-model --api-base URL --data-dir TMP`` plus ``--ours-flags`` (default
  ``--no-evaluate``: the games' outcomes come from the rule-based game judge, no LLM
  judge is called), the server in its ``random-schema`` mode (a random value of each enum:
  random legal play, since our schema offers only legal moves). Skipped, saying so, while
  the game file is not in this tree.

For each side it reports the wall time of the whole command (start-up included), the
model calls per game (counted at the server), the CPU (user + system) of the client's
process tree and per call, the games that ended by a win rather than a turn cap, and the
machine's load (a shared machine: read the numbers with it). ``--startup`` also times
Sotopia's start-up alone (0 games), which dominates one game's CPU.

Run: ``python benchmarks/sotopia_werewolf.py [--games 1] [--latency 0.05] [--players 6]
[--sides sotopia,ours] [--sotopia-python /work/venv-sotopia/bin/python] [--sotopia-src
DIR] [--startup]``. Setting up the Sotopia side: see docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from throughput import MODEL, ROOT, Server, Watch, environment, load

GAME = Path(__file__).resolve().parent / "sotopia_werewolf_game.py"
OURS_SPEC = ROOT / "examples" / "games" / "werewolf.json"


@dataclass
class Row:
    side: str
    game: str
    games: int
    wall_s: float
    cpu_s: float
    calls: int
    ended: int | None  # games ended by a win condition; None: not known
    max_in_flight: int
    mean_in_flight: float
    peak_rss_mb: float
    exit_code: int
    load: str
    note: str = ""

    @property
    def calls_per_game(self) -> float:
        return self.calls / max(self.games, 1)

    @property
    def cpu_per_call_ms(self) -> float:
        return self.cpu_s / max(self.calls, 1) * 1000


def measure(
    side: str, game: str, games: int, command: list[str], env: dict[str, str],
    server: Server, work: Path, marker: str,
) -> tuple[Row, Path]:  # fmt: skip
    """Runs ``command`` to its end, sampling its process tree; the row lacks ``ended``."""
    server.stats(reset=True)
    before = load()
    log = work / f"{side.split()[0].lower()}-{games}.log"
    with open(log, "w") as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=work)
        watch = Watch(process.pid, marker)
        code = process.wait()
        wall = time.perf_counter() - started
        watch.stop()
    stats = server.stats()
    if code:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        print(f"{side}: exit code {code}\n{tail}", file=sys.stderr)
    row = Row(
        side=side,
        game=game,
        games=games,
        wall_s=wall,
        cpu_s=sum(watch.cpu.values()),
        calls=int(stats["requests"]),
        ended=None,
        max_in_flight=int(stats["max_in_flight"]),
        mean_in_flight=stats["mean_in_flight"],
        peak_rss_mb=watch.peak_rss_mb,
        exit_code=code,
        load=f"{before} → {load()}",
    )
    return row, log


def sotopia(args: argparse.Namespace, games: int, work: Path) -> Row | None:
    example = args.sotopia_src / "examples" / "experimental" / "werewolves"
    if not (example / "main.py").exists() or not args.sotopia_python.exists():
        print(
            f"sotopia: skipped: no {example}/main.py or no {args.sotopia_python} "
            "(set up as docs/benchmarks.md says)",
            file=sys.stderr,
        )
        return None
    home = work / "home"  # their local JSON store (~/.sotopia/data) goes here, unused
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "REDIS_OM_URL")}
    env.update(
        HOME=str(home),
        SOTOPIA_STORAGE_BACKEND="local",  # theirs: no Redis (see sotopia_werewolf_game.py)
        LITELLM_LOCAL_MODEL_COST_MAP="True",  # no network fetch of litellm's price list
        CUSTOM_API_KEY="sk-bench",
    )
    server = Server(args.latency, "sotopia-werewolf", args.seed)
    try:
        command = [
            str(args.sotopia_python), str(GAME), "--example-dir", str(example),
            "--api-base", server.url, "--games", str(games), "--players", str(args.players),
            "--concurrency", str(args.sotopia_concurrency),
        ]  # fmt: skip
        row, log = measure(
            "Sotopia WerewolfEnv", f"{args.players} players", games, command, env,
            server, work, str(home),
        )  # fmt: skip
    finally:
        server.stop()
    results = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    summary = next((r for r in results if r.get("summary")), None)
    if summary is not None:
        row.ended = int(summary["ended"])
        steps = summary["steps"] / max(games, 1)
        row.note = f"games alone {summary['wall_s']:.1f} s; {steps:.1f} steps per game"
    return row


def ours(args: argparse.Namespace, games: int, work: Path) -> Row | None:
    if not args.ours_spec.exists():
        print(
            f"ours: skipped: {args.ours_spec} is not in this tree yet (the games engine "
            "has not landed)",
            file=sys.stderr,
        )
        return None
    data = work / "data"
    server = Server(args.latency, "random-schema", args.seed)
    try:
        command = [
            sys.executable, "-m", "sotopia_are", "batch", str(args.ours_spec.resolve()),
            "-n", str(games),
            "--model", MODEL, "--api-base", server.url, "--data-dir", str(data),
            "--tag", f"bench-werewolf-{games}", *shlex.split(args.ours_flags),
        ]  # fmt: skip
        row, _ = measure(
            "sotopia-are", args.ours_spec.name, games, command, environment(), server, work,
            str(data),
        )  # fmt: skip
    finally:
        server.stop()
    # batch exits 0 only when every episode finished (and was rated, if asked).
    row.note = "all finished" if row.exit_code == 0 else f"exit {row.exit_code}"
    row.ended = won_games(data, f"bench-werewolf-{games}")
    return row


def won_games(data: Path, tag: str) -> int:
    """How many of the batch's stored games a team won (their outcome verdicts, by the
    rule-based game judge, name winners), rather than reaching the cycle limit."""
    import sotopia_are as sa

    store = sa.connect(data_dir=data)
    try:
        won = 0
        for episode_id in store.episode_ids(tag=tag):
            verdict = store.load(episode_id).verdict_of(sa.GameJudge().verdict_key)
            if verdict is not None and any(
                rating.scores()["won"] for rating in verdict.evaluation.ratings
            ):
                won += 1
        return won
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="1", help="games per run; a list runs each: 1,1000")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--players", type=int, default=6, help="Sotopia's: 6 (theirs) or 7")
    parser.add_argument("--sides", default="sotopia,ours")
    parser.add_argument("--seed", type=int, default=0, help="the server's random moves")
    parser.add_argument(
        "--sotopia-python", type=Path, default=Path("/work/venv-sotopia/bin/python")
    )
    parser.add_argument(
        "--sotopia-src",
        type=Path,
        default=Path(os.environ.get("SOTOPIA_SRC", "/work/sotopia-src")),
        help="a Sotopia source tree (for examples/experimental/werewolves)",
    )
    parser.add_argument(
        "--sotopia-concurrency", type=int, default=0, help="Sotopia's games at once (0: all)"
    )
    parser.add_argument("--ours-spec", type=Path, default=OURS_SPEC)
    parser.add_argument("--ours-flags", default="--no-evaluate")
    parser.add_argument("--startup", action="store_true", help="also time Sotopia with 0 games")
    parser.add_argument("--keep-logs", type=Path, default=None, help="copy the logs here")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    sides = {"sotopia": sotopia, "ours": ours}
    counts = [int(n) for n in args.games.split(",")]
    rows: list[Row] = []
    print(f"{os.cpu_count()} cores; load {load()}", flush=True)
    plan = [("sotopia", 0)] if args.startup and "sotopia" in args.sides else []
    plan += [(side, n) for n in counts for side in args.sides.split(",")]
    for side, games in plan:
        with tempfile.TemporaryDirectory(prefix=f"werewolf-{side}-") as scratch:
            row = sides[side](args, games, Path(scratch))
            if args.keep_logs is not None:
                args.keep_logs.mkdir(parents=True, exist_ok=True)
                for log in Path(scratch).glob("*.log"):
                    log.replace(args.keep_logs / log.name)
        if row is not None:
            rows.append(row)
            print(json.dumps(asdict(row)), flush=True)
    print()
    print(f"server latency {args.latency * 1000:.0f} ms, {os.cpu_count()} cores")
    print()
    print(
        "| side | game | games | wall (s) | model calls per game | CPU (s) | CPU per call (ms) "
        "| ended by a win | in flight (max / mean) | peak RSS (MB) | load | note |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        ended = "?" if r.ended is None else f"{r.ended} / {r.games}"
        print(
            f"| {r.side} | {r.game} | {r.games} | {r.wall_s:.1f} | {r.calls_per_game:.1f} "
            f"| {r.cpu_s:.1f} | {r.cpu_per_call_ms:.1f} | {ended} "
            f"| {r.max_in_flight} / {r.mean_in_flight:.0f} | {r.peak_rss_mb:.0f} | {r.load} "
            f"| {r.note} |"
        )
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2))


if __name__ == "__main__":
    main()
