"""The demo works from an installed wheel, away from any checkout: the wheel ships the
example scripts and scenarios along with the prompt templates."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_demo_runs_from_an_installed_wheel(tmp_path: Path) -> None:
    wheels, target, elsewhere = tmp_path / "wheels", tmp_path / "site", tmp_path / "cwd"
    elsewhere.mkdir()
    pip = [sys.executable, "-m", "pip", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(REPO)],
        check=True,
    )
    [wheel] = wheels.glob("sotopia_are-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True)

    env = {**os.environ, "PYTHONPATH": str(target), "SOTOPIA_ARE_DATA_DIR": str(tmp_path / "d")}
    env.pop("REDIS_OM_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "sotopia_are", "demo"],
        cwd=elsewhere,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    where = subprocess.run(
        [sys.executable, "-c", "import sotopia_are; print(sotopia_are.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(target)), "the test must run the wheel, not the checkout"
    assert "[private to ['Ines Okafor']]" in done.stdout
    assert list(elsewhere.glob("*.json")), "the demo exports ARE JSON into the working directory"
