"""Loading the Python files and modules a scenario's apps live in (``data_handler.loading``)."""

import logging
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sotopia_are.simulation.apps.registry import default_app_registry
from sotopia_are.simulation.data_handler.loading import (
    AppSourceError,
    import_scenario,
    importer_with_apps,
    load_app_module,
)

ROOT = Path(__file__).parents[2]
DOCUMENTATION_EXAMPLE = ROOT / "tests" / "data" / "are" / "documentation_complete_example.json"
TEST_APPS = Path(__file__).parent / "scenario_json_apps.py"


@pytest.fixture(autouse=True)
def _forget_tmp_modules(tmp_path: Path) -> Iterator[None]:
    """Files loaded from ``tmp_path`` leave ``sys.modules`` as it was."""
    yield
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


def _source(error: pytest.ExceptionInfo[AppSourceError]) -> tuple[str, str]:
    return error.value.source, error.value.reason


def test_a_file_is_loaded_once_under_its_stem(tmp_path: Path) -> None:
    path = tmp_path / "loading_once_apps.py"
    path.write_text("from sotopia_are.simulation.apps.app import App\nclass Once(App): pass\n")
    module = load_app_module(str(path))
    assert sys.modules["loading_once_apps"] is module
    assert load_app_module(str(path)) is module


def test_a_module_by_name() -> None:
    assert load_app_module("sotopia_are.simulation.apps.app").__name__.endswith("apps.app")


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("../no_such_loading_apps.py", "no such Python file"),
        ("../no_such_loading_apps", "no such Python file"),
        ("apps/", "no such Python file"),
        ("no_such_loading_module", "no such Python file or module"),
        ("sotopia_are.no_such_loading_module", "no such Python file or module"),
    ],
)
def test_a_missing_source_is_named_clearly(source: str, reason: str) -> None:
    with pytest.raises(AppSourceError) as error:
        load_app_module(source)
    assert _source(error) == (source, reason)
    assert str(error.value) == f"{source}: {reason}"


def test_a_file_that_is_not_python(tmp_path: Path) -> None:
    path = tmp_path / "apps.txt"
    path.write_text("class A: pass\n")
    with pytest.raises(AppSourceError, match=r"apps\.txt: not a Python file \(\.py\)$"):
        load_app_module(str(path))


def test_a_file_that_fails_to_import_is_reported_and_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "loading_broken_apps.py"
    path.write_text("import no_such_dependency_of_these_apps\n")
    with pytest.raises(AppSourceError) as error:
        load_app_module(str(path))
    assert error.value.reason == (
        "ModuleNotFoundError: No module named 'no_such_dependency_of_these_apps'"
    )
    assert "loading_broken_apps" not in sys.modules


def test_a_file_named_like_an_imported_module_does_not_replace_it(tmp_path: Path) -> None:
    path = tmp_path / "json.py"
    path.write_text("raise SystemExit('must not run')\n")
    json_module = sys.modules["json"]
    with pytest.raises(AppSourceError, match="a module named 'json' is already imported"):
        load_app_module(str(path))
    assert sys.modules["json"] is json_module


def test_the_app_classes_of_a_source_are_registered_on_a_copy() -> None:
    importer = importer_with_apps([str(TEST_APPS)])
    assert importer.app_registry.resolve("CalendarApp").__module__ == "scenario_json_apps"
    assert "scenario_json_apps" in importer.allowed_modules()
    assert "CalendarApp" not in default_app_registry


def test_two_sources_with_the_same_class_name_are_refused(tmp_path: Path) -> None:
    twin = tmp_path / "loading_twin_apps.py"
    shutil.copy(TEST_APPS, twin)
    with pytest.raises(AppSourceError) as error:
        importer_with_apps([str(TEST_APPS), str(twin)])
    assert error.value.source == str(twin)
    assert "is already registered for scenario_json_apps." in error.value.reason


def test_import_reports_what_it_left_out_without_logging_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        scenario, completed = import_scenario(
            DOCUMENTATION_EXAMPLE.read_text(), apps_to_skip=["EmailApp"], lenient=True
        )
    assert scenario.import_report is not None
    assert scenario.import_report.skipped_apps == ["EmailApp", "NotificationApp"]
    assert scenario.import_report.dropped_event_ids[0].startswith("reminder_001 ")
    assert completed == [] and caplog.records == []
    # The importer logs again afterwards.
    with caplog.at_level(logging.WARNING):
        importer_with_apps([]).import_from_json(
            DOCUMENTATION_EXAMPLE.read_text(), apps_to_skip=["EmailApp"], lenient=True
        )
    assert "was not imported as is" in caplog.text
