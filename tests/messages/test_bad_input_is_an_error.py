"""Bad input is an error, not a traceback or a silent accept (#19, item 7)."""

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from sotopia_are.messages import ScriptBackground, parse_script
from sotopia_are.record import load_record
from sotopia_are.simulation.data_handler.errors import ScenarioFormatError
from sotopia_are.simulation.data_handler.importer import JsonScenarioImporter
from sotopia_are.social import EpisodeSpec

MEETING = Path(__file__).parents[1] / "data" / "are" / "meeting_request_001.json"


def _background(names: list[str]) -> ScriptBackground:
    return ScriptBackground(
        scenario="s", agent_names=names, agent_backgrounds=["", ""], agent_goals=["g", "g"]
    )


@pytest.mark.parametrize(
    ("names", "words"),
    [
        (["Bo Chen", " "], "must not be blank"),
        (["Bo Chen", ""], "must not be blank"),
        (["Bo Chen", "Bo  Chen"], "ignoring case and spacing"),
        (["Bo Chen", "bo chen"], "ignoring case and spacing"),
        (["Bo Chen", "Bo Chen "], "ignoring case and spacing"),
        (["Bo Chen", "Ana\x1b[31mLee"], "control character"),
        (["Bo Chen", "Ana\nLee"], "control character"),
    ],
)
def test_blank_twin_and_control_character_names_are_refused(names: list[str], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        _background(names)
    with pytest.raises(ValidationError, match=words):
        EpisodeSpec(
            scenario="s", agent_names=names, agent_backgrounds=["", ""], agent_goals=["", ""]
        )


def test_real_names_stay_accepted() -> None:
    names = ["Zoë O'Brien-Šmidt", "李 小龙"]
    assert _background(names).agent_names == names


def test_unquoted_speech_keeps_its_trailing_comma() -> None:
    (action,) = parse_script("Turn #1\nBo Chen: I left the conversation,\n", ["Ana Lee", "Bo Chen"])
    assert (action.action.action_type, action.action.argument) == (
        "speak",
        "I left the conversation,",
    )
    # The stray comma of transcripts exported from JSON lists is still dropped elsewhere.
    (left,) = parse_script("Turn #1\nBo Chen left the conversation,", ["Ana Lee", "Bo Chen"])
    assert left.action.action_type == "leave"


def test_a_negative_relative_time_is_an_error_naming_the_event() -> None:
    document: Any = json.loads(MEETING.read_text())
    event = next(i for i, e in enumerate(document["events"]) if e.get("event_relative_time"))
    document["events"][event]["event_relative_time"] = -5
    with pytest.raises(ScenarioFormatError, match=f"events\\[{event}\\].event_relative_time"):
        JsonScenarioImporter().import_from_json(json.dumps(document), skip_unknown_apps=True)


@pytest.mark.parametrize("depth", [900, 200_000])
def test_too_deep_nesting_is_a_format_error(depth: int) -> None:
    nested = "[" * depth + "]" * depth
    with pytest.raises(ScenarioFormatError, match="nested too deeply"):
        JsonScenarioImporter().import_from_json(
            '{"version": "are_simulation_v1", "x": ' + nested + "}"
        )
    with pytest.raises(ValueError):  # a clean error, whatever the depth
        load_record('{"version": 1, "episode_id": "a", "spec": ' + nested + "}")
