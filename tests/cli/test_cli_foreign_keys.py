"""`list`, `show` and `export --all` over a store holding keys the store did not write,
and names with control characters stored before they were refused."""

import json
from pathlib import Path

from cli_support import invoke

from sotopia_are.cli.common import printable
from sotopia_are.storage import EpisodeLog, connect
from sotopia_are.storage.keys import EPISODES_BY_TIME

ESCAPE = "\x1b[31mred\nline"


def _demo(tmp_path: Path) -> list[str]:
    result = invoke("demo", "-o", tmp_path / "demo.json", env={"SOTOPIA_ARE_MODEL": ""})
    assert result.exit_code == 0, result.output
    with connect() as store:
        return store.episode_ids()


def test_printable_escapes_control_characters_only() -> None:
    assert printable("Müller 李 Ana-Lu") == "Müller 李 Ana-Lu"
    assert printable(ESCAPE) == "\\x1b[31mred\\nline"
    assert printable("a\nb\u202e", keep_newlines=True) == "a\nb\\u202e"


def test_cli_list_and_export_all_name_foreign_keys(redis_url: str, tmp_path: Path) -> None:
    ids = _demo(tmp_path)
    with connect() as store:
        store.client.set(EpisodeLog.redis_key("foreign"), "a string")
        store.client.hset(EpisodeLog.redis_key("garbage"), mapping={"status": "bogus"})
        store.client.zadd(EPISODES_BY_TIME, {"foreign": 0, "garbage": 1})
    listed = invoke("list")
    assert listed.exit_code == 0, listed.output
    assert "Traceback" not in listed.output and all(pk in listed.stdout for pk in ids)
    assert listed.stderr.splitlines() == [
        "warning: skipped sotopia_are:EpisodeLog:foreign: holds a string, not a hash",
        "warning: skipped sotopia_are:EpisodeLog:garbage: its fields are no valid EpisodeLog "
        "(status: Input should be 'running', 'complete', 'failed' or 'incomplete')",
    ]
    as_json = invoke("list", "--json")
    listed_ids = [json.loads(line)["episode_id"] for line in as_json.stdout.splitlines()]
    assert sorted(listed_ids) == sorted(ids)
    for args in (["--all"], ["--all", "--format", "are", "-o", str(tmp_path / "are")]):
        exported = invoke("export", *args)
        assert exported.exit_code == 1 and "Traceback" not in exported.output
        assert "sotopia_are:EpisodeLog:foreign" in exported.stderr
        assert "sotopia_are:EpisodeLog:garbage" in exported.stderr
        assert "nothing was exported" in exported.stderr
    assert not (tmp_path / "are").exists()
    shown = invoke("show", "foreign")
    assert shown.exit_code == 1 and "Traceback" not in shown.output
    assert "unreadable key 'sotopia_are:EpisodeLog:foreign': holds a string" in shown.stderr


def test_cli_a_foreign_time_index_is_reported_and_the_episodes_still_listed(
    redis_url: str, tmp_path: Path
) -> None:
    ids = _demo(tmp_path)
    with connect() as store:
        store.client.delete(EPISODES_BY_TIME)
        store.client.set(EPISODES_BY_TIME, "a string")
    listed = invoke("list", "--tag", "demo")
    assert listed.exit_code == 0 and all(pk in listed.stdout for pk in ids)
    assert listed.stderr.startswith(f"warning: skipped {EPISODES_BY_TIME}: holds a string")


def test_cli_show_and_list_escape_stored_control_characters(redis_url: str, tmp_path: Path) -> None:
    ids = _demo(tmp_path)
    with connect() as store:
        for pk in ids:
            store.client.hset(EpisodeLog.redis_key(pk), "tag", ESCAPE)
    listed = invoke("list")
    assert listed.exit_code == 0, listed.output
    assert "\x1b" not in listed.stdout and printable(ESCAPE) in listed.stdout
    with connect() as store:
        # A loaded record refuses such a tag; free text such as the ending is kept as is.
        store.client.hset(EpisodeLog.redis_key(ids[0]), mapping={"tag": "demo"})
        store.client.hset(EpisodeLog.redis_key(ids[0]), "termination_reason", ESCAPE)
    shown = invoke("show", ids[0])
    assert shown.exit_code == 0, shown.output
    assert "\x1b" not in shown.stdout and "ended: \\x1b[31mred\nline" in shown.stdout
