"""Script parsing time against script size: is `parse_script` linear?

Builds scripts of 0.5, 1, 2 and 5 MB from the actions of the real transcripts in
tests/data/transcripts (speech of every length, multi-line speech, actions, leaving), one
action per turn, with the header styles and line endings mixed as people mix them, and
times `parse_script` on each (best of 3). Run: ``python benchmarks/parse.py [MB ...]``.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from sotopia_are.messages import AgentAction, parse_script, render_action

TRANSCRIPTS = Path(__file__).parent.parent / "tests" / "data" / "transcripts"
NAMES = ["Mia Davis", "Benjamin Jackson"]
HEADERS = ["Turn #{n}\n", "Turn {n}:\n", "Turn #{n}: ", "turn {n} "]
ENDINGS = ["\n", "\r\n"]


def material() -> list[AgentAction]:
    """Every action of the real transcripts that renders as itself."""
    expected = json.loads((TRANSCRIPTS / "expected.json").read_text(encoding="utf-8"))
    actions: list[AgentAction] = []
    for stem, info in sorted(expected.items()):
        text = (TRANSCRIPTS / f"{stem}.txt").read_text(encoding="utf-8")
        for item in parse_script(text, info["agents"]):
            try:
                render_action("x", item.action)
            except ValueError:
                continue
            actions.append(item.action)
    return actions


def build(size: int, actions: list[AgentAction]) -> tuple[str, int]:
    """A script of about ``size`` bytes (UTF-8) and its number of actions."""
    rng = random.Random(size)
    parts: list[str] = []
    total = count = 0
    while total < size:
        count += 1
        line = render_action(NAMES[count % 2], rng.choice(actions))
        turn = rng.choice(HEADERS).format(n=count) + line + "\n"
        turn = turn.replace("\n", rng.choice(ENDINGS))
        parts.append(turn)
        total += len(turn.encode("utf-8"))
    return "".join(parts), count


def best_time(text: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        parse_script(text, NAMES)
        best = min(best, time.perf_counter() - start)
    return best


def main(sizes_mb: list[float]) -> None:
    actions = material()
    print("| size (MB) | lines | actions | parse (s) | µs per line | MB/s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for mb in sizes_mb:
        text, count = build(int(mb * 1_000_000), actions)
        lines = text.count("\n") + 1
        seconds = best_time(text)
        print(
            f"| {mb:g} | {lines:,} | {count:,} | {seconds:.2f} | "
            f"{seconds / lines * 1e6:.1f} | {mb / seconds:.2f} |"
        )


if __name__ == "__main__":
    main([float(arg) for arg in sys.argv[1:]] or [0.5, 1, 2, 5])
