"""Scripts as people write them (#18, item 5): screenplay labels, cues, stage directions,
headings; every skipped line is noted, every unreadable cue a warning or an error."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sotopia_are.cli import app
from sotopia_are.messages import (
    ParsedScript,
    ScriptInteraction,
    ScriptParseError,
    parse_script,
    parse_script_notes,
)

SCENE = Path(__file__).parents[2] / "examples" / "scripts" / "late_shift_screenplay.txt"
NAMES = ["Dana Reyes", "Marcus Webb", "Lucia Moreno"]
DANA, MARCUS, LUCIA = NAMES

Row = tuple[str, str, str, list[str] | None]


def rows(text: str, names: list[str] = NAMES) -> list[Row]:
    return [
        (a.speaker, a.action.action_type, a.action.argument, a.action.to)
        for a in parse_script(text, names)
    ]


def notes(text: str, names: list[str] = NAMES) -> list[str]:
    return [str(note) for note in parse_script_notes(text, names).notes]


def test_the_late_shift_scene() -> None:
    parsed = parse_script_notes(SCENE.read_text(encoding="utf-8"), NAMES)
    assert [(a.speaker, a.action.action_type, a.action.argument, a.action.to, a.line) for a in
            parsed.actions] == [
        (DANA, "speak", "You're late again.", None, 5),
        (MARCUS, "non-verbal communication", "sighs and pulls out a chair", None, 6),
        (MARCUS, "speak", "Traffic. You know how it is.", None, 7),
        (DANA, "speak", "He was at the casino.", [LUCIA], 8),
        (LUCIA, "speak", "I'm sure he has a reason.", None, 9),
        (LUCIA, "leave", "", None, 11),
    ]  # fmt: skip
    assert [str(note) for note in parsed.notes] == [
        "note: line 1: skipped a title: 'THE LATE SHIFT'",
        "note: line 3: skipped a scene heading: 'INT. HOSPITAL BREAK ROOM - NIGHT'",
        "note: line 5: the delivery cue '(without looking up)' is not part of the speech",
    ]
    assert parsed.warnings == []
    assert ScriptInteraction(interactions=SCENE.read_text()).read(NAMES) == parsed


def test_labels_in_any_case_by_first_or_full_name_with_screenplay_extensions() -> None:
    text = (
        "DANA: one\nDana Reyes: two\ndana: three\nMARCUS WEBB (CONT'D): four\n"
        'Lucia (O.S.): five\nmarcus (V.O.): six\nDANA (CONT\u2019D) said: "seven"\n'
        "LUCIA: [action] pours coffee\nmarcus: did nothing\nDana: left the conversation\n"
    )
    assert rows(text) == [
        (DANA, "speak", "one", None),
        (DANA, "speak", "two", None),
        (DANA, "speak", "three", None),
        (MARCUS, "speak", "four", None),
        (LUCIA, "speak", "five", None),
        (MARCUS, "speak", "six", None),
        (DANA, "speak", "seven", None),
        (LUCIA, "action", "pours coffee", None),
        (MARCUS, "none", "", None),
        (DANA, "leave", "", None),
    ]


def test_a_first_name_two_participants_share_is_not_a_label() -> None:
    names = ["Ann Lee", "Ann Park", "Bo Chen"]
    assert rows("BO: hi\nann park: yo\n", names) == [
        ("Bo Chen", "speak", "hi", None),
        ("Ann Park", "speak", "yo", None),
    ]
    with pytest.raises(ScriptParseError, match="'ANN' is not a participant") as caught:
        parse_script("BO: hi\nANN: which one?\n", names)
    assert caught.value.line_number == 2


def test_a_label_on_its_own_line_with_the_speech_below() -> None:
    text = (
        "LUCIA\nI'm sure he has a reason.\nHe always does.\n\n"
        "Marcus:\n(beat)\nThanks.\n\nDANA (CONT'D)\n(whispering to Lucia)\nDon't.\n"
    )
    parsed = parse_script_notes(text, NAMES)
    assert [(a.speaker, a.action.argument, a.action.to, a.line) for a in parsed.actions] == [
        (LUCIA, "I'm sure he has a reason.\nHe always does.", None, 1),
        (MARCUS, "Thanks.", None, 5),
        (DANA, "Don't.", [LUCIA], 9),
    ]
    assert [str(n) for n in parsed.notes] == [
        "note: line 5: the delivery cue '(beat)' is not part of the speech"
    ]


def test_a_label_with_no_speech_below_is_a_warning() -> None:
    parsed = parse_script_notes("DANA: hi\nMARCUS\n\nLUCIA: yo\n", NAMES)
    assert [a.speaker for a in parsed.actions] == [DANA, LUCIA]
    assert [str(n) for n in parsed.warnings] == [
        "warning: line 2: the label 'MARCUS' has no speech below it; skipped"
    ]


@pytest.mark.parametrize(
    "line",
    [
        "DANA: (whispering to Lucia) He was at the casino.",
        "DANA: [whispers to Lucia] He was at the casino.",
        "DANA: (aside, to Lucia) He was at the casino.",
        "DANA: (whispers to LUCIA MORENO) He was at the casino.",
        "DANA (whispering to lucia): He was at the casino.",
        "DANA: (to Lucia, whispering) He was at the casino.",
        "DANA: (whispering in Lucia's ear) He was at the casino.",
        'DANA: (whispering to Lucia) "He was at the casino."',
        'DANA (whispering to Lucia) said: "He was at the casino."',
    ],
)
def test_whisper_and_aside_cues_make_the_line_private(line: str) -> None:
    assert rows(line) == [(DANA, "speak", "He was at the casino.", [LUCIA])]


def test_to_someone_is_said_aloud_and_delivery_cues_are_not_speech() -> None:
    text = "DANA: (to Lucia) Coffee?\nMARCUS: (quietly) Fine. (beat) Thanks.\n"
    parsed = parse_script_notes(text, NAMES)
    assert [(a.speaker, a.action.argument, a.action.to) for a in parsed.actions] == [
        (DANA, "Coffee?", None),
        (MARCUS, "Fine. Thanks.", None),
    ]
    assert [n.line for n in parsed.notes] == [1, 2, 2]
    assert parsed.warnings == []


def test_a_whisper_in_the_middle_of_a_line_splits_it() -> None:
    text = "DANA: Morning. (whispering to Lucia and Marcus) Not you. (aloud) Coffee?\n"
    assert rows(text) == [
        (DANA, "speak", "Morning.", None),
        (DANA, "speak", "Not you.", [LUCIA, MARCUS]),
        (DANA, "speak", "Coffee?", None),
    ]
    parsed = parse_script(text, NAMES)
    assert [a.line for a in parsed] == [1, 1, 1]


def test_cues_alone_are_a_non_verbal_communication() -> None:
    assert rows("DANA: (sighs)\nMARCUS: [whispering to Dana] (shrugs)\n") == [
        (DANA, "non-verbal communication", "sighs", None),
        (MARCUS, "non-verbal communication", "whispering to Dana; shrugs", [DANA]),
    ]


def test_stage_directions_that_name_a_participant_are_their_actions() -> None:
    text = (
        "DANA: Sit.\n(MARCUS sighs and pulls out a chair.)\n[Lucia pours three coffees]\n"
        "Marcus leaves a note on the table.\nDana nods.\n(LUCIA exits.)\nMarcus leaves.\n"
        "Dana storms out of the room.\n"
    )
    assert rows(text) == [
        (DANA, "speak", "Sit.", None),
        (MARCUS, "non-verbal communication", "sighs and pulls out a chair", None),
        (LUCIA, "action", "pours three coffees", None),
        (MARCUS, "action", "leaves a note on the table", None),
        (DANA, "non-verbal communication", "nods", None),
        (LUCIA, "leave", "", None),
        (MARCUS, "leave", "", None),
        (DANA, "leave", "", None),
    ]


def test_titles_headings_and_narration_naming_nobody_are_skipped_with_notes() -> None:
    text = (
        "THE LATE SHIFT\n\nFADE IN:\nScene 1\nINT. CAFE - DAY\n\nRain against the window.\n"
        "DANA: Hi.\n(A phone rings somewhere.)\nThe kettle clicks off.\nCUT TO:\n"
    )
    parsed = parse_script_notes(text, NAMES)
    assert [a.action.argument for a in parsed.actions] == ["Hi."]
    assert [str(n) for n in parsed.notes] == [
        "note: line 1: skipped a title: 'THE LATE SHIFT'",
        "note: line 3: skipped a transition: 'FADE IN:'",
        "note: line 4: skipped a scene heading: 'Scene 1'",
        "note: line 5: skipped a scene heading: 'INT. CAFE - DAY'",
        "note: line 7: skipped context before the conversation: 'Rain against the window.'",
        "note: line 9: skipped a stage direction naming no participant: "
        "'(A phone rings somewhere.)'",
        "note: line 10: skipped narration naming no participant: 'The kettle clicks off.'",
        "note: line 11: skipped a transition: 'CUT TO:'",
    ]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("DANA: hi\nNURSE: Room four.\n", 2, "speaker 'NURSE' is not a participant"),
        ("DANA: hi\nNurse Kim (O.S.): Room four.\n", 2, "'Nurse Kim' is not a participant"),
        ("NURSE: Room four.\nDANA: hi\n", 1, "speaker 'NURSE' is not a participant"),
        ("DANA: hi\n\nNURSE\nRoom four.\n", 3, "if it is a title, put a blank line after it"),
        ("DANA: hi\nNURSE (O.S.)\n", 2, "speaker 'NURSE' is not a participant"),
        ("DANA: (whispering to her) He lies.\n", 1, "whispers to 'her', who is not a"),
        ("DANA: (whispering to Dana) He lies.\n", 1, "to themselves"),
        ("LUCIA\n(whispering to Nurse Kim)\nHe lies.\n", 1, "'Nurse Kim', who is not a"),
        ('DANA: hi\nMarcus said "fine"\n', 2, "cannot understand"),
        ("DANA: hi\nDana (whispering to Lucia) He lies.\n", 2, "inside a stage direction"),
        ("DANA: hi\n(Dana leans in [whispers to Lucia] He lies.)\n", 2, "inside a stage"),
    ],
)
def test_what_cannot_be_read_safely_is_an_error_naming_the_line(
    text: str, line: int, fragment: str
) -> None:
    with pytest.raises(ScriptParseError) as caught:
        parse_script(text, NAMES)
    assert caught.value.line_number == line
    assert fragment in str(caught.value)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("DANA: (whispering) He lies.\n", 1, "names no one to whisper to, so the line is public"),
        ("DANA: hi\nThe door opens and LUCIA enters.\n", 2, "names Lucia Moreno but does not"),
        ("DANA: hi\n(Marcus and Lucia exchange a look.)\n", 2, "about Marcus Webb and Lucia"),
        ("DANA: (to the nurse) Wait.\n", 1, "'(to the nurse)' names no participant"),
        ("DANA: He (was late.\n", 1, "unmatched bracket"),
        ("DANA: Fine. (whispering to Lucia)\n", 1, "nothing is said after the cue"),
    ],
)
def test_a_cue_it_cannot_read_is_a_warning_naming_the_line(
    text: str, line: int, fragment: str
) -> None:
    parsed = parse_script_notes(text, NAMES)
    assert [(w.line, w.severity) for w in parsed.warnings] == [(line, "warning")]
    assert fragment in parsed.warnings[0].message
    assert str(parsed.warnings[0]).startswith(f"warning: line {line}: ")


def test_a_whisper_without_a_recipient_between_two_is_only_a_note() -> None:
    parsed = parse_script_notes("Ann: (whispering) hi\nBo: yo\n", ["Ann", "Bo"])
    assert parsed.warnings == [] and [n.line for n in parsed.notes] == [1]


def test_sotopia_scripts_read_as_before_with_a_note_on_their_context() -> None:
    text = 'Scenario: a bakery\nParticipants: Ann and Bo\nTurn #1\nAnn said: "(quietly) hi"\n'
    parsed = parse_script_notes(text, ["Ann", "Bo"])
    assert [(a.speaker, a.action.argument) for a in parsed.actions] == [("Ann", "(quietly) hi")]
    assert [str(n) for n in parsed.notes] == [
        "note: line 1: lines 1-2, before the first turn header, are context; skipped"
    ]
    assert isinstance(parsed, ParsedScript)


def test_turn_scripts_read_no_screenplay_lines() -> None:
    # Under turn headers every line must be an action: narration stays an error.
    with pytest.raises(ScriptParseError, match="cannot understand") as caught:
        parse_script('Turn #1\nAnn said: "hi"\nBo sighs.\n', ["Ann", "Bo"])
    assert caught.value.line_number == 3


def test_the_parse_command_prints_notes_and_warnings_on_stderr(tmp_path: Path) -> None:
    agents = ",".join(NAMES)
    result = CliRunner().invoke(app, ["parse", str(SCENE), "--agents", agents, "--json"])
    assert result.exit_code == 0, result.output
    assert [a["to"] for a in json.loads(result.stdout)] == [None, None, None, [LUCIA], None, None]
    assert result.stderr.splitlines() == [
        "note: line 1: skipped a title: 'THE LATE SHIFT'",
        "note: line 3: skipped a scene heading: 'INT. HOSPITAL BREAK ROOM - NIGHT'",
        "note: line 5: the delivery cue '(without looking up)' is not part of the speech",
    ]
    script = tmp_path / "whisper.txt"
    script.write_text("DANA: (whispering) He lies.\nLUCIA: Does he?\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["parse", str(script), "--agents", agents])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("warning: line 1: the cue '(whispering)' names no one")
    script.write_text("DANA: hi\nNURSE: Room four.\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["parse", str(script), "--agents", agents])
    assert result.exit_code == 1
    assert "line 2: speaker 'NURSE' is not a participant" in result.stderr
