"""`sotopia-are scenario validate|run`: output, exit codes, errors without tracebacks."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sotopia_are.cli import app

ROOT = Path(__file__).parent.parent.parent
ARE_DATA = ROOT / "tests" / "data" / "are"
TEST_APPS = str(Path(__file__).parent / "scenario_json_apps.py")
EXAMPLE = ROOT / "examples" / "scenarios" / "are"

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["scenario", *args], env={"COLUMNS": "300"})
    return result.exit_code, result.stdout, result.stderr


def test_validate_a_real_export_with_its_apps() -> None:
    code, out, _ = invoke(
        "validate", str(ARE_DATA / "meeting_request_001.json"), "--apps", TEST_APPS
    )
    assert code == 0
    assert "valid scenario 'meeting_request_001': 3 apps, 3 events, 3 completed events" in out


def test_validate_names_missing_apps_and_how_to_proceed() -> None:
    code, out, err = invoke("validate", str(ARE_DATA / "meeting_request_001.json"))
    assert code == 1 and out == ""
    assert "apps[0].class_name: unknown app classes" in err
    assert "--skip-unknown-apps" in err and "Traceback" not in err


def test_run_prints_the_completed_events() -> None:
    code, out, _ = invoke("run", str(ARE_DATA / "scenario_tutorial.json"), "--apps", TEST_APPS)
    assert code == 0
    assert "scenario_tutorial: 4 events" in out
    assert "EmailClientApp.forward_email" in out


def test_run_the_example_scenario() -> None:
    code, out, _ = invoke(
        "run",
        str(EXAMPLE / "team_standup.json"),
        "--apps",
        str(EXAMPLE / "standup_apps.py"),
    )
    assert code == 0, out
    # 7 actions, plus one record per evaluation of its polling condition check (logged
    # as ARE logs them, once per tick until it holds).
    assert "team_standup: 97 events" in out
    assert "VALIDATION" in out and "STOP" in out


def test_documentation_example_runs_with_unknown_apps_skipped() -> None:
    path = str(ARE_DATA / "documentation_complete_example.json")
    code, out, err = invoke("run", path, "--skip-unknown-apps")
    assert code == 0
    assert "skipped apps: EmailApp, NotificationApp" in err
    assert "email_apology_001: 0 events" in out


def test_documentation_example_event_of_an_unlisted_app() -> None:
    # The example's one event calls NotificationApp, which its "apps" do not list.
    path = str(ARE_DATA / "documentation_complete_example.json")
    code, out, err = invoke("validate", path, "--skip-app", "EmailApp")
    assert code == 1 and out == ""
    assert "events[0].action.app: no app 'NotificationApp'" in err
    assert "hint: leave out that app's events with --skip-app NAME or --lenient" in err
    for flags in (["--lenient"], ["--skip-apps", "NotificationApp"]):
        code, out, err = invoke("run", path, "--skip-app", "EmailApp", *flags)
        assert code == 0, err
        assert "skipped apps: EmailApp, NotificationApp" in err
        assert "dropped events: reminder_001 (calls " in err
        assert "email_apology_001: 0 events" in out


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('{"version": ', "$: not valid JSON"),
        ('{"version": "are_simulation_v1"}', "metadata: Field required"),
    ],
)
def test_bad_files_fail_with_a_path_and_no_traceback(
    tmp_path: Path, content: str, words: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    for command in ("validate", "run"):
        code, out, err = invoke(command, str(path))
        assert code == 1 and out == ""
        assert words in err and "Traceback" not in err


def test_missing_file() -> None:
    code, _, err = invoke("validate", "/no/such/file.json")
    assert code == 1 and "file.json: no such file" in err
