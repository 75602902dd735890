"""The viewer served over HTTP from a real store, and `sotopia-are view` as a user runs
it: served until Ctrl-C, or written as one static file."""

import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from typer.testing import CliRunner
from viewer_support import GARDEN_WHISPER, TAG, Seeded

from sotopia_are.cli import app
from sotopia_are.viewer import ViewerServer


@contextmanager
def running(seeded: Seeded, tag: str | None = None) -> Iterator[str]:
    """A viewer server on a free port, in a thread; its URL."""
    with seeded.store() as store, ViewerServer(store, port=0, tag=tag) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield server.url
        finally:
            server.shutdown()
            thread.join()


def get(url: str) -> tuple[int, dict[str, str], str]:
    """Status, headers and body of GET ``url``, errors included."""
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, dict(reply.headers), reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def test_the_server_shows_the_list_an_episode_and_a_batch(seeded: Seeded) -> None:
    with running(seeded) as url:
        status, headers, page = get(url)
        assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
        assert "script-src 'none'" in headers["Content-Security-Policy"]
        assert all(f">{episode}</a>" in page for episode in [seeded.garden, *seeded.played])
        status, _, page = get(f"{url}episode/{seeded.garden}")
        assert status == 200 and GARDEN_WHISPER in page and "private to Ines Okafor" in page
        status, _, page = get(f"{url}tag/{TAG}")
        assert status == 200 and "goal · 6 scores" in page


def test_the_server_filters_from_the_query_string(seeded: Seeded) -> None:
    with running(seeded) as url:
        _, _, page = get(f"{url}?status=failed&tag={TAG}")
        assert f">{seeded.failed}</a>" in page and f">{seeded.played[0]}</a>" not in page
        assert '<option value="failed" selected>' in page
        status, _, page = get(f"{url}?max_score=lowest")
        assert status == 400 and "max_score must be a number, not &#39;lowest&#39;" in page


def test_the_server_says_what_is_not_there(seeded: Seeded) -> None:
    with running(seeded) as url:
        status, _, page = get(f"{url}episode/no-such-episode")
        assert status == 404 and "no-such-episode" in page
        assert get(f"{url}elsewhere")[0] == 404


def test_a_server_for_one_tag_shows_only_its_episodes(seeded: Seeded) -> None:
    with running(seeded, tag="demo") as url:
        _, _, page = get(url)
        assert f">{seeded.garden}</a>" in page and f">{seeded.played[0]}</a>" not in page
        assert get(f"{url}episode/{seeded.played[0]}")[0] == 404
        assert get(f"{url}tag/{TAG}")[0] == 404


def test_view_static_writes_one_file_with_the_tags_episodes(seeded: Seeded, tmp_path: Path) -> None:
    out = tmp_path / "viewer.html"
    result = CliRunner().invoke(
        app, ["view", "--static", str(out), "--tag", TAG, "--redis-url", seeded.url], input=""
    )
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote {out}\n"
    page = out.read_text()
    assert all(f'id="episode-{episode}"' in page for episode in seeded.played)
    assert seeded.garden not in page


def test_view_serves_until_ctrl_c_and_stops_cleanly(seeded: Seeded) -> None:
    command = [sys.executable, "-m", "sotopia_are", "view", "--port", "0"]
    server = subprocess.Popen(
        [*command, "--redis-url", seeded.url],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("viewer at http://127.0.0.1:") and "Ctrl-C" in line
        url = line.split()[2]
        assert get(f"{url}episode/{seeded.garden}")[0] == 200
        server.send_signal(signal.SIGINT)
        _, stderr = server.communicate(timeout=20)
    finally:
        server.kill()
        server.wait()
    assert server.returncode == 130 and "Traceback" not in stderr


def test_view_on_a_port_in_use_says_so(seeded: Seeded) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            app, ["view", "--port", str(port), "--redis-url", seeded.url], input=""
        )
    assert result.exit_code == 1
    assert f"cannot serve on 127.0.0.1:{port}" in result.output
    assert "0 picks a free one" in result.output


def test_view_with_no_redis_is_one_clear_error(tmp_path: Path) -> None:
    for extra in ([], ["--static", str(tmp_path / "viewer.html")]):
        result = CliRunner().invoke(
            app, ["view", "--port", "0", "--redis-url", "redis://127.0.0.1:1", *extra], input=""
        )
        assert result.exit_code == 1, extra
        assert result.stderr.startswith("error: cannot use Redis at redis://127.0.0.1:1")
        assert "Traceback" not in result.output
    assert not (tmp_path / "viewer.html").exists()
