"""`sotopia-are export` / `import`: JSONL and ARE JSON round trips, profiles."""

import json
from pathlib import Path

from cli_support import EXAMPLES, invoke

from sotopia_are.social import import_episode
from sotopia_are.storage import AgentProfile, connect


def test_cli_export_import_round_trip(redis_url: str, tmp_path: Path) -> None:
    assert invoke("demo", "-o", tmp_path / "d.json", env={"SOTOPIA_ARE_MODEL": ""}).exit_code == 0
    with connect() as store:
        before = {e.pk: store.load(e.pk) for e in store.list_episodes()}
    out = tmp_path / "all.jsonl"
    exported = invoke("export", "--all", "-o", out)
    assert exported.exit_code == 0 and "exported 2 episodes" in exported.stdout
    are_dir = tmp_path / "are"
    assert invoke("export", "--all", "--format", "are", "-o", are_dir).exit_code == 0
    for pk in before:
        assert import_episode((are_dir / f"{pk}.json").read_text()).spec.episode_id == pk
    with connect() as store:
        store.client.flushdb()
    imported = invoke("import", out)
    assert imported.exit_code == 0 and "imported 2 episodes" in imported.stdout
    with connect() as store:
        after = {e.pk: store.load(e.pk) for e in store.list_episodes()}
    assert after == before
    one = invoke("export", next(iter(before)))  # JSONL of one episode on stdout
    assert json.loads(one.stdout)["episode_id"] == next(iter(before))


def test_cli_import_profiles_and_bad_lines(redis_url: str, tmp_path: Path) -> None:
    result = invoke("import", EXAMPLES / "profiles" / "agents.jsonl")
    assert result.exit_code == 0 and "imported 9 agents" in result.stdout
    with connect() as store:
        assert store.get(AgentProfile, "jo-ng").name == "Jo Ng"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"first_name": "Ada"}\n{not json\n')
    failed = invoke("import", bad)
    assert failed.exit_code == 1 and f"{bad}:2: not JSON" in failed.stderr
    with connect() as store:
        assert len(store.all(AgentProfile)) == 9  # nothing of the bad file was written
