"""`sotopia-are show` (full and --as), `list` with filters."""

import json
from pathlib import Path

import pytest
from cli_support import invoke

from sotopia_are.storage import connect

PRIVATE = "Jo Ng [private to ['Ines Okafor']] said:"


@pytest.fixture
def demo_ids(redis_url: str, tmp_path: Path) -> dict[str, str]:
    """Run the offline demo; the ids of its two episodes by scenario."""
    result = invoke("demo", "-o", tmp_path / "demo.json", env={"SOTOPIA_ARE_MODEL": ""})
    assert result.exit_code == 0, result.output
    with connect() as store:
        return {e.scenario_id: e.pk for e in store.list_episodes(tag="demo")}


def test_cli_show_full_and_as_one_agent(demo_ids: dict[str, str]) -> None:
    episode_id = demo_ids["garden-committee"]
    full = invoke("show", episode_id)
    assert full.exit_code == 0, full.output
    assert PRIVATE in full.stdout and "Jo Ng's goal: Get space for the herbs" in full.stdout
    recipient = invoke("show", episode_id, "--as", "Ines Okafor")
    assert PRIVATE in recipient.stdout and "Jo Ng's goal: Unknown" in recipient.stdout
    outsider = invoke("show", episode_id, "--as", "Benedikt Müller-Roth")
    assert outsider.exit_code == 0
    assert "Between us" not in outsider.stdout and "nods slowly at Jo" in outsider.stdout


def test_cli_show_unknown_agent_and_episode(demo_ids: dict[str, str]) -> None:
    result = invoke("show", demo_ids["garden-committee"], "--as", "Mallory")
    assert result.exit_code == 1
    assert "unknown agent 'Mallory'" in result.stderr and "Traceback" not in result.output
    missing = invoke("show", "no-such-episode")
    assert missing.exit_code == 1
    assert "no episode 'no-such-episode' in " in missing.stderr
    assert "see 'sotopia-are list'" in missing.stderr


def test_cli_list_filters(demo_ids: dict[str, str]) -> None:
    def listed(*args: str) -> list[str]:
        result = invoke("list", "--json", *args)
        assert result.exit_code == 0, result.output
        return [json.loads(line)["episode_id"] for line in result.stdout.splitlines()]

    assert sorted(listed()) == sorted(demo_ids.values())
    assert listed("--scenario", "bakery-negotiation") == [demo_ids["bakery-negotiation"]]
    assert listed("--tag", "demo", "--status", "complete", "--agent", "Jo Ng") == [
        demo_ids["garden-committee"]
    ]
    assert listed("--status", "failed", "--allow-empty") == []
    assert listed("--model", "openai/x", "--allow-empty") == []
    # Without --allow-empty, matching nothing is an error that says so.
    empty = invoke("list", "--json", "--status", "failed")
    assert empty.exit_code == 1 and empty.stdout == ""
    assert "no episodes match status 'failed'" in empty.stderr and "--allow-empty" in empty.stderr
    table = invoke("list", "--tag", "demo")
    assert demo_ids["garden-committee"] in table.stdout
    bad = invoke("list", "--status", "finished")
    assert bad.exit_code == 2
