"""ARE's own kernel tests pass on our kernel through the import mapping.

ARE 1.2.0's wheel ships its tests (``are/simulation/tests/``, MIT licensed); they are run
from there, not copied here. They run in a subprocess under
``python -m sotopia_are.simulation.compat``, so ``are.simulation.environment``,
``types``, ``data_handler`` and so on are our modules. Every test that passes on ARE
itself on this machine must pass, but for the ones :data:`KNOWN_FAILURES` names with
the reason (docs/are-compatibility.md has the same table).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

_SPEC = importlib.util.find_spec("are")
ARE_TESTS = (
    Path(next(iter(_SPEC.submodule_search_locations))) / "simulation" / "tests"
    if _SPEC is not None and _SPEC.submodule_search_locations
    else None
)
MODULES = [
    "environment_test.py",
    "core_test.py",
    "scheduling_test.py",
    "notification_test.py",
    "time_manager_test.py",
    "data_handler/importer_test.py",
    "data_handler/exporter_test.py",
]
# These fail on ARE itself here: they need the Hugging Face Hub or sample files.
DESELECTED = (
    "not random_population and not sample_files and not roundtrip"
    " and not export_with_config and not export_without_config"
)
KNOWN_FAILURES = {
    # It schedules a call whose arg is the placeholder "{{e1}}", where no event has the
    # id "e1" (e1 is the name of a variable there). ARE passes the text on as written;
    # our kernel refuses a placeholder that names no completed event, on purpose (see
    # "Where we differ" in docs/are-compatibility.md), so the run fails at that event.
    # Everything else it checks (ARE's texts per app, the stop message) is compared with
    # ARE itself in test_are_notifications.py.
    "notification_test::test_verbose_notification_env_events",
}
PASSING_ON_ARE = 53


@pytest.mark.skipif(
    ARE_TESTS is None or not (ARE_TESTS / "core_test.py").is_file(),
    reason="Meta ARE's wheel (with its tests) is not installed",
)
def test_are_kernel_tests_pass_on_our_kernel(tmp_path: Path) -> None:
    assert ARE_TESTS is not None
    report = tmp_path / "junit.xml"
    command = [
        sys.executable,
        "-m",
        "sotopia_are.simulation.compat",
        "--",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={report}",
        "-k",
        DESELECTED,
        *(str(ARE_TESTS / module) for module in MODULES),
    ]
    done = subprocess.run(
        command, cwd=tmp_path, env=dict(os.environ), capture_output=True, text=True, timeout=600
    )
    assert report.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    outcomes: dict[str, bool] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").rpartition(".")[2]
        failed = any(case.find(tag) is not None for tag in ("failure", "error"))
        if case.find("skipped") is None:
            outcomes[f"{module}::{case.get('name')}"] = not failed
    failing = {name for name, passed in outcomes.items() if not passed}
    assert len(outcomes) == PASSING_ON_ARE, sorted(outcomes)
    assert failing == KNOWN_FAILURES, done.stdout[-6000:]
