"""`sotopia-are demo`: offline on the embedded Redis in a data dir, and with a model."""

import os
from pathlib import Path

import pytest
from cli_support import BAKERY, MODEL, conversation_rule, invoke

from sotopia_are.social import import_episode
from sotopia_are.storage import connect
from sotopia_are.testing import LocalLLMServer


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("SOTOPIA_ARE_MODEL", "SOTOPIA_ARE_API_BASE", "SOTOPIA_ARE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_cli_demo_offline_replays_stores_shows_and_exports(
    storage_data_dir: str, offline: None, tmp_path: Path
) -> None:
    result = invoke("demo")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"the embedded Redis in {os.path.realpath(storage_data_dir)}" in out
    assert 'Mara Quinn said: "Two sixty-five with the menu credit. Final offer."' in out
    private = "Jo Ng [private to ['Ines Okafor']] said:"
    assert private in out  # the full transcript marks it
    view = out.split("as Benedikt Müller-Roth saw it")[1]
    transcript, hidden = view.split("private action(s) hidden from")
    assert private not in transcript and "Ines Okafor said:" in transcript
    assert private in hidden
    exported = tmp_path / "sotopia-are-demo.json"
    episode = import_episode(exported.read_text())
    assert episode.spec.agent_names == ["Ines Okafor", "Benedikt Müller-Roth", "Jo Ng"]
    with connect() as store:
        stored = store.list_episodes(tag="demo", status="complete")
    assert len(stored) == 2 and episode.spec.episode_id in {e.pk for e in stored}
    # The ARE file imports back into a store as an episode that shows like the original.
    other = tmp_path / "other-data"
    imported = invoke("import", exported, "--data-dir", other)
    assert imported.exit_code == 0, imported.output
    shown = invoke("show", episode.spec.episode_id, "--as", "Ines Okafor", "--data-dir", other)
    assert shown.exit_code == 0, shown.output
    assert private in shown.stdout


def test_cli_demo_with_a_model_runs_llm_vs_llm_and_evaluates(
    redis_url: str, offline: None, llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = conversation_rule(BAKERY)
    result = invoke(
        "demo", "--model", MODEL, "--api-base", llm_server.url, "-o", tmp_path / "out.json"
    )
    assert result.exit_code == 0, result.output
    assert 'Mara Quinn said: "Let us meet halfway."' in result.stdout
    assert "Scores from judge openai/test-model, rubric sotopia_eval" in result.stdout
    assert "as Teo Alvarez saw it" in result.stdout
    assert (tmp_path / "out.json").is_file()
    with connect() as store:
        (episode,) = store.list_episodes(tag="demo")
    assert episode.models == [MODEL, MODEL] and episode.scores["Mara Quinn"]["goal"] == 5
