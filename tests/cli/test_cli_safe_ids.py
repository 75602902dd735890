"""Ids and tags that would place files outside the chosen directory are refused (#19)."""

import json
from pathlib import Path

import pytest
from cli_support import invoke
from pydantic import ValidationError

from sotopia_are.record import EpisodeRecord, load_record
from sotopia_are.simulation.files import path_inside
from sotopia_are.social import EpisodeSpec, EpisodeStatus
from sotopia_are.storage import EpisodeRecorder, connect

ESCAPING = "../../../x"


def _spec(episode_id: str = "safe-1") -> EpisodeSpec:
    return EpisodeSpec(
        episode_id=episode_id,
        scenario="Two neighbours share a garden.",
        agent_names=["Ana Lee", "Bo Chen"],
        agent_backgrounds=["", ""],
        agent_goals=["get the sunny plot", "keep the shed"],
    )


def _record(episode_id: str = "safe-1") -> EpisodeRecord:
    # Failed before its first turn: consistent with having no events (imports check it).
    return EpisodeRecord(
        episode_id=episode_id,
        spec=_spec(episode_id),
        status=EpisodeStatus.FAILED,
        reason="the model server could not be reached",
    )


@pytest.mark.parametrize("bad", [ESCAPING, "/etc/x", "a/b", "", ".hidden", "-rf", "a:b", "x\n"])
def test_specs_and_records_refuse_unsafe_ids_naming_value_and_set(bad: str) -> None:
    with pytest.raises(ValidationError, match="letters A-Z") as error:
        _spec(bad)
    assert repr(bad) in str(error.value)
    with pytest.raises(ValidationError, match="letters A-Z"):
        load_record({**json.loads(_record().to_json()), "episode_id": bad})


def test_tags_are_checked_and_may_be_empty(redis_url: str) -> None:
    assert _record().model_copy(update={"tag": ""}).tag == ""
    with pytest.raises(ValidationError, match=r"tag '\.\./t'"):
        load_record({**json.loads(_record().to_json()), "tag": "../t"})
    with connect() as store, pytest.raises(ValueError, match="tag 'a b'"):
        EpisodeRecorder(store, tag="a b")


def test_import_refuses_an_escaping_episode_id_and_stores_nothing(
    redis_url: str, tmp_path: Path
) -> None:
    good = _record().to_json()
    bad = json.dumps({**json.loads(good), "episode_id": ESCAPING})
    legacy = json.dumps({"pk": ESCAPING, "spec": _spec().model_dump(mode="json")})
    for line in (bad, legacy):
        path = tmp_path / "in.jsonl"
        path.write_text(good + "\n" + line + "\n")
        result = invoke("import", path)
        assert result.exit_code == 1, result.output
        assert f"{path}:2:" in result.stderr and repr(ESCAPING) in result.stderr
        assert "letters A-Z" in result.stderr
    with connect() as store:
        assert store.episode_ids() == []


def test_export_writes_nothing_outside_the_directory(redis_url: str, tmp_path: Path) -> None:
    inner = tmp_path / "a" / "b" / "out" / "inner"
    with connect() as store:
        store.save_record(_record())
        # As an older sotopia_are could have stored it, before ids were checked.
        store.save_record(_record().model_copy(update={"episode_id": ESCAPING}))
    result = invoke("export", "--all", "--format", "are", "-o", inner)
    assert result.exit_code == 1 and ESCAPING in result.stderr and "outside" in result.stderr
    assert not (tmp_path / "x.json").exists()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_path_inside_resolves_and_refuses_escapes(tmp_path: Path) -> None:
    assert path_inside(str(tmp_path / "d"), "e.json") == str(tmp_path / "d" / "e.json")
    for name in ("../e.json", "/tmp/e.json", "sub/../../e.json", "."):
        with pytest.raises(ValueError, match="outside"):
            path_inside(str(tmp_path / "d"), name)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "link.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(ValueError, match="outside"):
        path_inside(str(tmp_path / "d"), "link.json")
