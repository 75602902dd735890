"""Every code block of the README and the docs site runs, so the docs cannot rot.

Each page's ```python and ```bash blocks run in the order they appear, as a reader would
run them: each in its own subprocess, from a working directory that holds the repository's
``examples/``, ``tests/`` and ``benchmarks/`` (so the paths the docs use resolve) and
nothing else, offline. A page's blocks share one throw-away embedded store
(``SOTOPIA_ARE_DATA_DIR``), so a block may read what an earlier block of its page stored;
every page gets a fresh one. Where a block needs a model it gets the stand-in server
(``python -m sotopia_are.testing``), started once for the whole module as a user starts
it, with ``SOTOPIA_ARE_API_BASE`` pointing at it. A bash line that starts the stand-in
(``python -m sotopia_are.testing --port 8000 &``) is left out, and the docs' address of
it, ``http://127.0.0.1:8000/v1``, becomes the shared one's.

A Python block may ``await`` at its top level, as in a notebook or ``python -m asyncio``.
A block that cannot run here (it needs a real provider's key, a Ray cluster, a real model
server, or would install packages) is marked right before its fence with
``<!-- skip-test: why -->``; the reason is required. Other fences (``text``, ``json``) are
output or data and are not run.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
RUN_LANGUAGES = {"python", "bash"}
SHOWN_LANGUAGES = {"text", "json", "jsonl", "jinja", "toml", "yaml"}
"""Fences that show output, data or files: read, never run."""
LINKED = ("examples", "tests", "benchmarks")
"""What the working directory of a page's blocks holds (symlinks into the repository)."""
DOCS_SERVER = "http://127.0.0.1:8000/v1"
STARTS_SERVER = re.compile(r"^\s*python -m sotopia_are\.testing\b.*&\s*(#.*)?$")
SKIP = re.compile(r"<!--\s*skip-test:(.*?)-->")
TIMEOUT_S = 240

# Top-level await (as `python -m asyncio` runs code): compile with the flag, and run the
# coroutine that evaluating such code returns.
RUNNER = textwrap.dedent(
    """
    import ast, asyncio, inspect, sys
    path = sys.argv[1]
    source = open(path, encoding="utf-8").read()
    code = compile(source, path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace = {"__name__": "__main__", "__file__": path}
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        asyncio.run(result)
    """
)


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its text and any skip reason."""

    page: Path
    line: int
    language: str
    text: str
    skip: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, each with the skip reason of the HTML comments
    right above its fence (``None`` when not marked)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = re.match(r"^```(\S*)\s*$", lines[index])
        if not opening:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        assert end < len(lines), f"{page.relative_to(ROOT)}:{index + 1}: a fence never closed"
        comments = []
        above = index - 1
        while above >= 0 and lines[above].strip().startswith("<!--"):
            comments.append(lines[above])
            above -= 1
        reasons = [m.group(1).strip() for c in comments for m in [SKIP.search(c)] if m]
        found.append(
            Block(
                page,
                index + 1,
                opening.group(1),
                "\n".join(lines[index + 1 : end]) + "\n",
                reasons[0] if reasons else None,
            )
        )
        index = end + 1
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture(scope="module")
def stand_in() -> Iterator[str]:
    """The stand-in model server, started as the docs start it; its base URL."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "sotopia_are.testing", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None and "test server" in server.stdout.readline()
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(timeout=10)


def _run(block: Block, script: Path, command: list[str], cwd: Path, env: dict[str, str]) -> None:
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.where}: the {block.language} block ran over {TIMEOUT_S} s")
    assert done.returncode == 0, (
        f"{block.where}: the {block.language} block exited {done.returncode}\n"
        f"--- block ({script})\n{block.text}--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
    )


def _bash(text: str, server: str) -> str:
    kept = [line for line in text.splitlines() if not STARTS_SERVER.match(line)]
    return "\n".join(kept).replace(DOCS_SERVER, server) + "\n"


def test_blocks_are_found_in_the_readme_and_the_docs() -> None:
    readme = blocks_of(ROOT / "README.md")
    assert [b.language for b in readme].count("python") >= 1
    assert len(PAGES) > 10
    assert ROOT / "README.md" in RUN_PAGES and len(RUN_PAGES) > 10
    # The CI script reads the README's two commands from right after their markers.
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for marker in ("<!-- main-command -->", "<!-- test-command -->"):
        assert re.search(re.escape(marker) + r"\n```bash\n.+\n```", text), marker


def test_skip_markers_give_a_reason_and_sit_on_a_block() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in SKIP.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            assert match.group(1).strip(), f"{page.relative_to(ROOT)}:{line}: no reason"
        inside = sum(b.text.count("skip-test") for b in blocks_of(page))  # shown, not used
        marked = text.count("skip-test") - inside
        assert marked == sum(b.skip is not None for b in blocks_of(page)), (
            f"{page.relative_to(ROOT)}: a skip-test marker that is not right above a fence"
        )


def test_every_fence_names_a_language_this_test_knows() -> None:
    for page in PAGES:
        for block in blocks_of(page):
            assert block.language in RUN_LANGUAGES | SHOWN_LANGUAGES, (
                f"{block.where}: fence language {block.language!r}"
            )


def _runnable(page: Path) -> list[Block]:
    return [b for b in blocks_of(page) if b.language in RUN_LANGUAGES and b.skip is None]


RUN_PAGES = [page for page in PAGES if _runnable(page)]


@pytest.mark.parametrize("page", RUN_PAGES, ids=[str(p.relative_to(ROOT)) for p in RUN_PAGES])
def test_the_blocks_of_a_page_run(page: Path, stand_in: str, tmp_path: Path) -> None:
    runnable = _runnable(page)
    work = tmp_path / "work"
    work.mkdir()
    for name in LINKED:
        (work / name).symlink_to(ROOT / name)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SOTOPIA_ARE_", "REDIS_OM_", "OPENAI_", "ANTHROPIC_"))
    }
    env.update(
        SOTOPIA_ARE_DATA_DIR=str(tmp_path / "data"),
        SOTOPIA_ARE_API_BASE=stand_in,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        # The worktree's package wins over any installed copy, in every subprocess.
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        COLUMNS="100",
    )
    for number, block in enumerate(runnable):
        if block.language == "python":
            script = tmp_path / f"block{number}.py"
            script.write_text(block.text, encoding="utf-8")
            _run(block, script, [sys.executable, "-c", RUNNER, str(script)], work, env)
        else:
            script = tmp_path / f"block{number}.sh"
            script.write_text(_bash(block.text, stand_in), encoding="utf-8")
            bash = shutil.which("bash") or "bash"
            _run(block, script, [bash, "-euo", "pipefail", str(script)], work, env)
