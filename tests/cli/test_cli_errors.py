"""Exit codes and messages: --help everywhere, an unreachable Redis, missing files."""

import pytest
from cli_support import SCENARIOS, invoke

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
