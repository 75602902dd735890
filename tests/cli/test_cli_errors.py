"""Exit codes and messages: --help everywhere, an unreachable Redis, missing files; the
library's errors as one line, anything else as a bug with its traceback."""

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from cli_support import SCENARIOS, invoke

import sotopia_are as sa
from sotopia_are.cli.common import BUG_NOTE
from sotopia_are.llm import ConfigurationError
from sotopia_are.messages import ScriptParseError
from sotopia_are.studies import StudyInputError

COMMANDS = ["demo", "run", "batch", "parse", "evaluate", "show", "list", "export", "import"]


@pytest.mark.parametrize("command", COMMANDS)
def test_cli_help_everywhere(command: str) -> None:
    result = invoke(command, "--help")
    assert result.exit_code == 0 and "Usage:" in result.stdout


def test_cli_unreachable_redis_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_OM_URL", "redis://127.0.0.1:1")
    for args in (["list"], ["demo"], ["show", "x"]):
        result = invoke(*args, env={"SOTOPIA_ARE_MODEL": ""})
        assert result.exit_code == 1, args
        assert result.stderr.startswith("error: cannot use Redis at redis://127.0.0.1:1")
        assert "REDIS_OM_URL" in result.stderr and "Traceback" not in result.output


def test_cli_missing_files(redis_url: str) -> None:
    for args in (
        ["run", "nope.json", "--model", "m"],
        ["batch", "nope.jsonl", "--model", "m"],
        ["import", "nope.jsonl"],
        ["evaluate", "--script", "nope.txt", "--spec", SCENARIOS / "garden_committee.json",
         "--model", "m"],
    ):  # fmt: skip
        result = invoke(*args)
        assert result.exit_code == 1, (args, result.output)
        assert "nope" in result.stderr and "no such file" in result.stderr


def test_cli_usage_errors_exit_2() -> None:
    assert invoke("run", "--no-such-flag").exit_code == 2
    assert invoke("batch").exit_code == 2


def test_cli_invalid_spec_is_one_error(redis_url: str) -> None:
    result = invoke("run", SCENARIOS / "are" / "team_standup.json", "--model", "m")
    assert result.exit_code == 1 and "is not a valid episode spec" in result.stderr


STANDUP = SCENARIOS / "are" / "team_standup.json"


def _raising(error: Exception) -> Callable[..., Any]:
    def load_scenario(*args: Any, **kwargs: Any) -> Any:
        raise error

    return load_scenario


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (StudyInputError("the input names no such thing"), 1),
        (ScriptParseError("the input names no such thing"), 1),
        (ConfigurationError("the input names no such thing"), 2),
    ],
)
def test_a_library_error_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch, error: Exception, code: int
) -> None:
    monkeypatch.setattr("sotopia_are.studies.load_scenario", _raising(error))
    result = invoke("scenario", "validate", STANDUP)
    assert result.exit_code == code
    assert result.stderr == "error: the input names no such thing\n"


@pytest.mark.parametrize("error", [ValueError("internal"), KeyError("internal"), TypeError()])
def test_any_other_exception_is_a_bug_with_its_traceback(
    monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    monkeypatch.setattr("sotopia_are.studies.load_scenario", _raising(error))
    result = invoke("scenario", "validate", STANDUP)
    # Not turned into an error line (a bare ValueError was, before the error root).
    assert result.exception is error and "error:" not in result.stderr
    assert getattr(error, "__notes__", []) == [BUG_NOTE]


def test_a_bug_prints_its_traceback_and_asks_for_a_report() -> None:
    code = (
        "import sys, sotopia_are.cli as cli, sotopia_are.studies as studies\n"
        "def load_scenario(*args, **kwargs):\n"
        "    return {}['no such key']\n"
        "studies.load_scenario = load_scenario\n"
        f"sys.argv = ['sotopia-are', 'scenario', 'validate', {str(STANDUP)!r}]\n"
        "cli.main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-2:] == ["KeyError: 'no such key'", BUG_NOTE]
    assert f"sotopia-are {sa.__version__}" in BUG_NOTE and "please report it" in BUG_NOTE
