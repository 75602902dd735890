"""`sotopia-are parse`: the table, --json, and clean errors."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sotopia_are.cli import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "scripts"
runner = CliRunner()

EXAMPLE_AGENTS = {
    "bakery_negotiation.txt": "Mara Quinn,Teo Alvarez",
    "garden_committee.txt": "Ines Okafor,Benedikt Müller-Roth,Jo Ng",
    "flat_share_chores.txt": "Sam O'Neill,Priya Raman",
    "late_shift_screenplay.txt": "Dana Reyes,Marcus Webb,Lucia Moreno",
}


def test_every_example_is_covered() -> None:
    assert {p.name for p in EXAMPLES.glob("*.txt")} == set(EXAMPLE_AGENTS)


@pytest.mark.parametrize("name", sorted(EXAMPLE_AGENTS))
def test_examples_parse_to_json(name: str) -> None:
    result = runner.invoke(
        app, ["parse", str(EXAMPLES / name), "--agents", EXAMPLE_AGENTS[name], "--json"]
    )
    assert result.exit_code == 0, result.output
    actions = json.loads(result.stdout)
    assert {a["speaker"] for a in actions} == set(EXAMPLE_AGENTS[name].split(","))


def test_readme_command_prints_a_table() -> None:
    result = runner.invoke(
        app,
        ["parse", str(EXAMPLES / "bakery_negotiation.txt"), "--agents", "Mara Quinn,Teo Alvarez"],
    )
    assert result.exit_code == 0, result.output
    assert "12 actions" in result.stdout
    assert "Mara Quinn" in result.stdout
    assert "non-verbal" in result.stdout


def test_private_message_in_json() -> None:
    result = runner.invoke(
        app,
        [
            "parse",
            str(EXAMPLES / "garden_committee.txt"),
            "--agents",
            EXAMPLE_AGENTS["garden_committee.txt"],
            "--json",
        ],
    )
    private = [a for a in json.loads(result.stdout) if a["to"]]
    assert private == [
        {
            "turn": 3,
            "line": 6,
            "speaker": "Jo Ng",
            "action_type": "speak",
            "argument": (
                "Between us: the co-op could share the plot with the school if the beds were split."
            ),
            "to": ["Ines Okafor"],
        }
    ]


def test_broken_script_fails_on_stderr_with_line_number() -> None:
    broken = Path(__file__).parent / "broken_script.txt"
    result = runner.invoke(app, ["parse", str(broken), "--agents", "Mara Quinn,Teo Alvarez"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "line 4: speaker 'Teo Alvaraz' is not a participant" in result.stderr
    assert 'Teo Alvaraz said: "Yes, I\'d like twelve loaves."' in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_file_and_bad_agents(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["parse", str(tmp_path / "nope.txt"), "--agents", "A,B"])
    assert missing.exit_code == 1
    assert "nope.txt: no such file" in missing.stderr
    script = tmp_path / "s.txt"
    script.write_text('A said: "x"\n', encoding="utf-8")
    one = runner.invoke(app, ["parse", str(script), "--agents", "A"])
    assert one.exit_code == 1
    assert "at least two participants" in one.stderr
