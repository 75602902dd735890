"""Smoke runs of every ``examples/*.py`` and of a tiny ``benchmarks/episodes.py``.

Each is run as a user would run it: a subprocess from the repository root, no stdin, its
data directory a fresh temporary one, and then once more on that same store (a rerun must
work too); then each test checks one: exit 0 and a line that only a run that got to its
end prints, both times. Most of their time is importing litellm (the
benchmark does so in each of its three child processes), so they run side by side.
"""

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 120

EXAMPLE_LINES = {
    "env_event.py": "[message from Landlord",
    "evaluate_script.py": "judge: 1 call(s)",
    "llm_vs_llm.py": "model calls",
    "parse_script.py": "the canonical rendering parses back to the same ones",
    "quickstart.py": "floor 80%: complete, 6 turns",
    "scripted_replay.py": "ARE export:",
    "store_and_show.py": "ARE JSON from the store:",
    "three_agents_private.py": "the evaluator's transcript (omniscient)",
    "training_data.py": "env episode 3: 4 turns",
}
"""Each example and a line of its output near the end."""

NEEDS_RL = {"training_data.py"}
"""Examples that need the rl extra (the dev extra installs it)."""

BENCHMARK = ("benchmarks/episodes.py", "--episodes", "2", "--turns", "2", "--latency", "0")


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    """Every example (by file name) and the benchmark (by its path).

    The benchmark runs its phases one after another, so it keeps one core busy; the
    examples run one at a time beside it, which on two cores finishes sooner than starting
    everything at once.
    """

    def start(*args: str, data: Path | None = None) -> subprocess.Popen[str]:
        data = data or tmp_path_factory.mktemp("data")
        return subprocess.Popen(
            [sys.executable, *args],
            cwd=ROOT,
            env={**os.environ, "SOTOPIA_ARE_DATA_DIR": str(data)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def finish(process: subprocess.Popen[str]) -> Run:
        try:
            stdout, stderr = process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        return Run(process.returncode, stdout, stderr)

    benchmark = start(*BENCHMARK)
    try:
        results = {}
        for name in EXAMPLE_LINES:
            # Twice on one store: an example must run again as a user reruns it.
            data = tmp_path_factory.mktemp("data")
            results[name] = finish(start(f"examples/{name}", data=data))
            results[f"{name} again"] = finish(start(f"examples/{name}", data=data))
        results[BENCHMARK[0]] = finish(benchmark)
        yield results
    finally:
        if benchmark.poll() is None:
            benchmark.kill()
            benchmark.wait()


def test_the_readme_shows_the_quickstart_as_it_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
    body = code[code.index("import sotopia_are as sa") :]
    assert body in readme
    lines = [line for line in body.splitlines() if line.strip()]
    assert len(lines) <= 17  # the two imports and 15 lines of a study


def test_every_example_is_smoke_tested() -> None:
    assert sorted(path.name for path in (ROOT / "examples").glob("*.py")) == sorted(EXAMPLE_LINES)


@pytest.mark.parametrize("name", sorted(EXAMPLE_LINES))
def test_example_runs_to_its_end(runs: dict[str, Run], name: str) -> None:
    if name in NEEDS_RL and importlib.util.find_spec("pettingzoo") is None:
        pytest.skip("the rl extra is not installed: pip install -e '.[rl]'")
    for run in (runs[name], runs[f"{name} again"]):  # the second on the first's store
        assert run.returncode == 0, run.stderr
        assert EXAMPLE_LINES[name] in run.stdout, run.stdout


def test_episodes_benchmark_prints_its_table(runs: dict[str, Run]) -> None:
    run = runs[BENCHMARK[0]]
    assert run.returncode == 0, run.stderr
    assert "| run | wall (s) | CPU (s) |" in run.stdout
    for row in ("| network |", "| cached |", "| runner only |"):
        assert row in run.stdout, run.stdout
