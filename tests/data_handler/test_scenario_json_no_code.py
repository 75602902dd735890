"""Reading a scenario file runs no code its user did not name (#19, item 6)."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from sotopia_are.cli import app

ROOT = Path(__file__).parents[2]
MEETING = ROOT / "tests" / "data" / "are" / "meeting_request_001.json"
TEST_APPS = str(Path(__file__).parent / "scenario_json_apps.py")


def _with_condition(tmp_path: Path, reference: str) -> Path:
    document: Any = json.loads(MEETING.read_text())
    document["events"][2] = {
        "class_name": "ConditionCheckEvent",
        "event_type": "CONDITION",
        "event_time": None,
        "event_id": "c",
        "dependencies": [],
        "event_relative_time": 1.0,
        "check": {"condition": reference},
    }
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(document))
    return path


def _validate(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["scenario", "validate", *map(str, args)])
    return result.exit_code, result.output


def test_a_reference_to_an_unnamed_module_is_refused_without_importing_it(
    tmp_path: Path,
) -> None:
    # In a fresh interpreter: `this` prints the Zen of Python when imported.
    args = ["scenario", "validate", str(_with_condition(tmp_path, "this:s")), "--apps", TEST_APPS]
    script = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from sotopia_are.cli import app\n"
        f"r = CliRunner().invoke(app, {args!r})\n"
        "print('EXIT', r.exit_code, 'this' in sys.modules)\n"
        "print(r.output)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert "EXIT 1 False" in done.stdout, done.stdout + done.stderr
    assert "Beautiful is better" not in done.stdout
    assert "events[2].check.condition" in done.stdout and "imports nothing" in done.stdout


def test_an_app_class_path_into_an_unnamed_module_is_refused(tmp_path: Path) -> None:
    document: Any = json.loads(MEETING.read_text())
    document["apps"][0]["class_name"] = "this.Fly"
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(document))
    code, output = _validate(path, "--apps", TEST_APPS)
    assert code == 1 and "imports nothing" in output and "'this'" in output
    assert "this" not in sys.modules


def test_references_resolve_among_the_modules_given_with_apps(tmp_path: Path) -> None:
    path = _with_condition(tmp_path, "scenario_json_apps:always_true")
    code, output = _validate(path, "--apps", TEST_APPS)
    assert code == 0, output
    # Only what the module defines: not what it imported from elsewhere.
    code, output = _validate(
        _with_condition(tmp_path, "scenario_json_apps:AppRegistry.copy"), "--apps", TEST_APPS
    )
    assert code == 1 and "is defined in 'sotopia_are.simulation.apps.registry'" in output
