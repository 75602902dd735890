"""JSON nested deeper than Python's parser goes (200,000 levels) in any file a command
reads — an episode spec, a batch of specs, a rubric, a JSONL import, human ratings, an
ARE scenario — is one clear error naming the file, never a ``RecursionError`` traceback."""

import json
from pathlib import Path

import pytest
from cli_support import SCENARIOS, invoke

DEPTH = 200_000
DEEP = "[" * DEPTH + "]" * DEPTH


def spec_with_deep_value() -> str:
    spec = json.loads((SCENARIOS / "bakery_negotiation.json").read_text())
    return json.dumps(spec)[:-1] + f', "metadata": {DEEP}}}'


FILES = {
    "spec for run": ("spec.json", spec_with_deep_value(), ["run", "{file}", "--model", "m"]),
    "specs for batch": ("specs.json", f"[{spec_with_deep_value()}]", ["batch", "{file}"]),
    "deep batch file": ("deep.json", DEEP, ["batch", "{file}", "--model", "m"]),
    "jsonl for batch": ("specs.jsonl", spec_with_deep_value(), ["batch", "{file}", "-m", "m"]),
    "rubric": ("rubric.json", DEEP, ["evaluate", "--tag", "t", "--rubric", "{file}", "-m", "m"]),
    "import": ("episodes.jsonl", DEEP, ["import", "{file}"]),
    "human ratings": ("labels.json", DEEP, ["agreement", "{file}"]),
    "ARE scenario": ("scenario.json", DEEP, ["scenario", "run", "{file}"]),
}


@pytest.mark.parametrize("kind", list(FILES))
def test_deep_json_is_a_clear_error_naming_the_file(
    kind: str, redis_url: str, tmp_path: Path
) -> None:
    name, text, args = FILES[kind]
    path = tmp_path / name
    path.write_text(text)
    result = invoke(*(str(path) if a == "{file}" else a for a in args))
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stderr.startswith("error: ") and str(path) in result.stderr
