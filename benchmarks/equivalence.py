"""Stored output unchanged: the same batch run by each of several source trees, exported
as JSONL and as ARE JSON, normalised, compared byte for byte with the first tree's.

A speed change must not change what is stored. Each tree (``--code NAME:PATH``: first on
``PYTHONPATH``, run from a scratch directory so that the current directory's code is not
the one taken) runs ``sotopia-are batch`` of ``throughput.py``'s spec (two agents,
``--turns`` turns, judged; ``--repeat`` episodes, CLI defaults) against
``benchmarks/fake_openai_server.py`` (its deterministic schema answers) on a fresh embedded
Redis, then ``export --tag`` in both formats. Episode ids are derived from the spec, so
they agree between runs; what differs between two runs of the same code is normalised
away, in the text, so the bytes as written are what is compared:

* every UUID (event, action and call ids: fresh on each run), numbered per episode in
  order of first appearance;
* every ``"latency_s"`` and ``"queued_s"`` (wall-clock measurements), set to 0.

Each episode's normalised JSONL line and ARE file are compared with the first tree's; the
report gives per tree the SHA-256 of its normalised output and the episodes that differ.
Exit 1 if any does. ``--keep DIR`` keeps the runs and normalised files.

Run: ``python benchmarks/equivalence.py --code main:/work/main --code branch:.``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput
from store_scale import environment

TAG = "equivalence"
UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIMING = re.compile(rb'"(latency_s|queued_s)":\s*[-+0-9.eE]+')


def normalised(text: bytes) -> bytes:
    """``text`` (one episode) with its UUIDs numbered by first appearance and its timings
    zeroed."""
    numbers: dict[bytes, int] = {}

    def number(match: re.Match[bytes]) -> bytes:
        return b"uuid-%d" % numbers.setdefault(match.group(0), len(numbers))

    return TIMING.sub(rb'"\1":0', UUID.sub(number, text))


def run(code: Path, work: Path, url: str, repeat: int, turns: int) -> dict[str, bytes]:
    """The tree's batch, exported: each episode's normalised JSONL line and ARE file
    (joined by a newline), by episode id."""
    work.mkdir(parents=True)
    specs, store = work / "specs.jsonl", work / "store"
    throughput.write_specs(specs, turns)
    env = environment(code)
    cli = [sys.executable, "-m", "sotopia_are"]
    subprocess.run(
        [*cli, "batch", str(specs), "-n", str(repeat), "--model", throughput.MODEL,
         "--api-base", url, "--data-dir", str(store), "--tag", TAG],
        env=env, cwd=work, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    lines, are = work / "episodes.jsonl", work / "are"
    for extra in (["-o", str(lines)], ["-f", "are", "-o", str(are)]):
        subprocess.run(
            [*cli, "export", "--tag", TAG, "--data-dir", str(store), *extra],
            env=env, cwd=work, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    episodes: dict[str, bytes] = {}
    for line in lines.read_bytes().splitlines():
        episode_id = json.loads(line)["episode_id"]
        exported = (are / f"{episode_id}.json").read_bytes()
        episodes[episode_id] = normalised(line) + b"\n" + normalised(exported)
    (work / "normalised").write_bytes(b"\n".join(episodes[k] for k in sorted(episodes)))
    return episodes


def digest(episodes: dict[str, bytes]) -> str:
    return hashlib.sha256(b"\n".join(episodes[k] for k in sorted(episodes))).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", action="append", required=True, help="NAME:PATH, repeatable")
    parser.add_argument("--repeat", type=int, default=12, help="episodes (default: 12)")
    parser.add_argument("--turns", type=int, default=20, help="turns an episode (default: 20)")
    parser.add_argument("--keep", type=Path, help="keep the runs in this directory")
    args = parser.parse_args()
    codes = [(name, Path(path)) for name, _, path in (c.partition(":") for c in args.code)]
    work = args.keep or Path(tempfile.mkdtemp(prefix="equivalence-"))
    server = throughput.Server(latency=0.0)
    try:
        runs = {
            name: run(code, work / name, server.url, args.repeat, args.turns)
            for name, code in codes
        }
    finally:
        server.stop()
        if args.keep is None:
            shutil.rmtree(work)
    first_name, first = next(iter(runs.items()))
    differ = False
    for name, episodes in runs.items():
        changed = sorted(
            k for k in first.keys() | episodes.keys() if first.get(k) != episodes.get(k)
        )
        differ = differ or bool(changed)
        verdict = f"differs from {first_name} in {len(changed)}: {changed}" if changed else "same"
        print(f"{name}: {len(episodes)} episodes, sha256 {digest(episodes)[:16]}, {verdict}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
