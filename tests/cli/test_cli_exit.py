"""The command's process ends without the interpreter's last walk over its objects."""

import subprocess
import sys

import pytest

_AFTER_MAIN = """
import gc, sys
from sotopia_are.cli import main
sys.argv = ["sotopia-are", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(gc.get_freeze_count())
"""


@pytest.mark.parametrize("args", [["--help"], ["batch"]])
def test_a_command_leaves_its_objects_frozen_for_the_exit(args: list[str]) -> None:
    # Frozen objects are skipped by the collection the interpreter makes at exit, which
    # after a batch of 1,000 episodes took 0.12 s of wall time (docs/benchmarks.md).
    done = subprocess.run(
        [sys.executable, "-c", _AFTER_MAIN, *args], capture_output=True, text=True, check=True
    )
    assert int(done.stdout.split()[-1]) > 0
