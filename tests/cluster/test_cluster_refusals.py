"""What a cluster batch refuses before anything runs, each with its fix: the embedded
store (the other nodes cannot reach it), and a missing Ray."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_support import RedisServer, redis_server_binary, spec
from typer.testing import CliRunner

from sotopia_are.cli import app
from sotopia_are.cluster import ClusterError, ray_batch
from sotopia_are.storage import connect


def specs_file(tmp_path: Path) -> Path:
    path = tmp_path / "bakery.jsonl"
    path.write_text("\n".join(spec(f"b{n}").model_dump_json() for n in range(2)) + "\n")
    return path


def run_cli(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], input="")
    return result.exit_code, result.output


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    server = RedisServer(binary, tmp_path / "redis")
    yield server.url
    server.stop()


def test_a_cluster_batch_refuses_the_embedded_store(storage_data_dir: str) -> None:
    with connect() as store:
        with pytest.raises(ClusterError, match=r"REDIS_OM_URL=redis://HOST:6379/0"):
            ray_batch([spec("b0")], "openai/m", address="ray://127.0.0.1:1", tag="t", store=store)
        assert store.episode_ids(tag="t") == []


def test_cli_cluster_on_the_embedded_store_exits_naming_the_fix(
    storage_data_dir: str, tmp_path: Path
) -> None:
    code, output = run_cli(
        "batch", specs_file(tmp_path), "--model", "openai/m", "--cluster", "ray://127.0.0.1:1"
    )
    assert code == 1
    assert "needs a Redis server every node reaches" in output and "--redis-url" in output


def test_cli_cluster_without_ray_exits_naming_the_extra(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what an environment without Ray gives
    code, output = run_cli(
        "batch", specs_file(tmp_path), "--model", "openai/m", "--redis-url", redis_url,
        "--cluster", "ray://127.0.0.1:1",
    )  # fmt: skip
    assert code == 1
    assert "pip install 'sotopia-are[ray]'" in output
    with connect(redis_url) as store:
        assert store.episode_ids(tag="bakery") == []


def test_without_cluster_nothing_imports_ray() -> None:
    probe = "import sys, sotopia_are.cli, sotopia_are.cluster; print('ray' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


def test_an_unreachable_cluster_is_a_quick_error_naming_the_fix(redis_url: str) -> None:
    with connect(redis_url) as store:
        for address in ("127.0.0.1:1", "ray://127.0.0.1:1"):
            started = time.monotonic()
            with pytest.raises(ClusterError, match=r"cannot reach the Ray cluster.*ray start"):
                ray_batch([spec("b0")], "openai/m", address=address, tag="t", store=store)
            assert time.monotonic() - started < 10
        assert store.episode_ids(tag="t") == []
