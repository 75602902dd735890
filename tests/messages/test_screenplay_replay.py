"""The screenplay example replays through the engine and is stored with the whisper kept
private: Marcus's view, live and as stored, never holds what Dana whispered to Lucia."""

from pathlib import Path

import pytest

from sotopia_are.agents import ScriptedAgent
from sotopia_are.messages import parse_script
from sotopia_are.record import record_of_result
from sotopia_are.social import EpisodeSpec, run_episode, script_spec
from sotopia_are.storage import connect

EXAMPLES = Path(__file__).parents[2] / "examples"
SCRIPT = EXAMPLES / "scripts" / "late_shift_screenplay.txt"
SPEC = EXAMPLES / "scenarios" / "late_shift_screenplay.json"
SECRET = "He was at the casino."


@pytest.mark.parametrize("path", sorted((EXAMPLES / "scenarios").glob("*.json")), ids=str)
def test_every_example_spec_is_valid_and_reads_its_script(path: Path) -> None:
    spec = EpisodeSpec.model_validate_json(path.read_text(encoding="utf-8"))
    assert all(spec.agent_backgrounds) and all(spec.agent_goals)
    script = EXAMPLES / "scripts" / f"{path.stem}.txt"
    if script.exists():
        speakers = {a.speaker for a in parse_script(script.read_text("utf-8"), spec.agent_names)}
        assert speakers == set(spec.agent_names)


async def test_the_scene_replays_and_is_stored_with_the_whisper_private(
    storage_data_dir: str,
) -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    base = EpisodeSpec.model_validate_json(SPEC.read_text(encoding="utf-8"))
    spec = script_spec(base, text)
    names = spec.agent_names
    dana, marcus, lucia = names
    result = await run_episode(spec, ScriptedAgent.from_script(text, names))
    assert result.status == "complete"
    assert result.actions() == [(a.speaker, a.action) for a in parse_script(text, names)]
    assert result.actions()[-1][0] == lucia and result.actions()[-1][1].action_type == "leave"

    record = record_of_result(result)
    with connect() as store:
        store.save_record(record)
        stored = store.load(record.episode_id)
    for episode in (result, stored):
        assert SECRET not in episode.transcript(marcus)
        assert SECRET in episode.transcript(lucia) and SECRET in episode.transcript(dana)
        assert "You're late again." in episode.transcript(marcus)
        assert "without looking up" not in episode.transcript(None)
