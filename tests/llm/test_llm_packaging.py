"""Import hygiene and packaging: litellm loads lazily; the wheel ships the templates."""

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_importing_the_package_does_not_import_litellm() -> None:
    code = (
        "import os, sys; os.environ.pop('LITELLM_LOCAL_MODEL_COST_MAP', None)\n"
        "import sotopia_are, sotopia_are.llm, sotopia_are.testing\n"
        "assert 'litellm' not in sys.modules, 'litellm imported eagerly'\n"
        "assert os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] == 'True'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_the_wheel_ships_the_prompt_templates(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        check=True,
    )
    [wheel] = tmp_path.glob("sotopia_are-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "sotopia_are/prompts/llm/repair.j2" in names
    assert "sotopia_are/prompts/llm/format_instructions.j2" in names
    assert "sotopia_are/llm/session.py" in names
