"""``load_scenario`` / ``run_scenario``: ARE scenario files with their apps, one error type."""

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sotopia_are.studies import ScenarioLoadError, load_scenario, run_scenario

ROOT = Path(__file__).parents[2]
ARE_DATA = ROOT / "tests" / "data" / "are"
MEETING = ARE_DATA / "meeting_request_001.json"
TUTORIAL = ARE_DATA / "scenario_tutorial.json"
DOCUMENTATION_EXAMPLE = ARE_DATA / "documentation_complete_example.json"
TEST_APPS = ROOT / "tests" / "data_handler" / "scenario_json_apps.py"
STANDUP = ROOT / "examples" / "scenarios" / "are" / "team_standup.json"
STANDUP_APPS = str(STANDUP.parent / "standup_apps.py")
EPISODE_SPEC = ROOT / "examples" / "scenarios" / "bakery_negotiation.json"


@pytest.fixture(autouse=True)
def _forget_tmp_modules(tmp_path: Path) -> Iterator[None]:
    """App files loaded from ``tmp_path`` leave ``sys.modules`` as it was."""
    yield
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


@pytest.fixture
def apps_file(tmp_path: Path) -> str:
    """A copy of the stand-ins for ARE's apps, as a user's own apps file."""
    path = tmp_path / "studies_meeting_apps.py"
    shutil.copy(TEST_APPS, path)
    return str(path)


def test_a_real_export_loads_with_an_apps_file(apps_file: str) -> None:
    loaded = load_scenario(MEETING, apps=[apps_file])
    assert loaded.scenario.scenario_id == "meeting_request_001"
    assert len(loaded.scenario.apps or []) == 3 and len(loaded.scenario.events) == 3
    assert len(loaded.completed_events) == 3
    assert loaded.report.summary() == ""
    assert {type(app).__module__ for app in loaded.scenario.apps or []} == {"studies_meeting_apps"}


def test_unknown_app_classes_come_with_the_way_on() -> None:
    with pytest.raises(ScenarioLoadError) as error:
        load_scenario(MEETING)
    message = str(error.value)
    assert message.startswith(f"{MEETING}: apps[0].class_name: unknown app classes")
    assert message.endswith(
        "\nhint: load them with --apps FILE, or use --skip-app / --skip-unknown-apps"
    )


def test_an_event_of_an_unlisted_app_is_refused_unless_lenient() -> None:
    with pytest.raises(ScenarioLoadError) as error:
        load_scenario(DOCUMENTATION_EXAMPLE, skip_apps=["EmailApp"])
    assert "events[0].action.app: no app 'NotificationApp'" in str(error.value)
    assert "hint: leave out that app's events with --skip-app NAME or --lenient" in str(error.value)
    loaded = load_scenario(DOCUMENTATION_EXAMPLE, skip_apps=["EmailApp"], lenient=True)
    assert loaded.report.skipped_apps == ["EmailApp", "NotificationApp"]
    assert loaded.scenario.events == []


def test_an_episode_spec_given_by_mistake_points_to_run(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    shutil.copy(EPISODE_SPEC, path)
    with pytest.raises(ScenarioLoadError) as error:
        load_scenario(path)
    message = str(error.value)
    assert message.startswith(f"{path}: ")
    assert "hint: this file looks like an episode spec, not ARE scenario JSON" in message
    assert "'sotopia-are run FILE'" in message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"version": ', "bad.json: $: not valid JSON"),
        (b'{"version": "are_simulation_v1"}', "bad.json: metadata: Field required"),
        (b'{"version": "\xff"}', "bad.json is not UTF-8 text: invalid start byte at byte 13"),
    ],
)
def test_bad_files_are_one_error_naming_the_file(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ScenarioLoadError) as error:
        load_scenario(path)
    assert str(error.value).startswith(f"{tmp_path}/") and expected in str(error.value)
    assert "hint" not in str(error.value)


def test_a_missing_or_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ScenarioLoadError, match=r"/no/such/file\.json: no such file$"):
        load_scenario("/no/such/file.json")
    with pytest.raises(ScenarioLoadError, match=r"^cannot read .*: Is a directory$"):
        load_scenario(tmp_path)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("../no_such_studies_apps.py", "--apps ../no_such_studies_apps.py: no such Python file"),
        ("no_such_studies_module", "--apps no_such_studies_module: no such Python file or module"),
    ],
)
def test_app_sources_that_do_not_exist_are_named(source: str, expected: str) -> None:
    with pytest.raises(ScenarioLoadError) as error:
        load_scenario(MEETING, apps=[source])
    assert str(error.value) == expected


def test_a_failing_apps_file_names_itself(tmp_path: Path) -> None:
    path = tmp_path / "studies_failing_apps.py"
    path.write_text("raise RuntimeError('no database')\n")
    with pytest.raises(ScenarioLoadError) as error:
        load_scenario(MEETING, apps=[str(path)])
    assert str(error.value) == f"--apps {path}: RuntimeError: no database"


def test_run_gives_the_completed_events(apps_file: str) -> None:
    done = run_scenario(TUTORIAL, apps=[apps_file])
    assert done.failure is None
    assert len(done.events) == 4
    assert any(event.function_name() == "forward_email" for event in done.events)


def test_a_run_whose_validation_fails_says_so(tmp_path: Path) -> None:
    document = json.loads(STANDUP.read_text())
    # Without the summary the "summary_check" milestone is never met.
    document["events"] = [e for e in document["events"] if e["event_id"] != "post_summary"]
    document["metadata"]["definition"]["hints"] = []
    path = tmp_path / "standup.json"
    path.write_text(json.dumps(document))
    done = run_scenario(path, apps=[STANDUP_APPS])
    assert done.failure == "the run failed (a validation failed)"
    assert run_scenario(STANDUP, apps=[STANDUP_APPS]).failure is None
