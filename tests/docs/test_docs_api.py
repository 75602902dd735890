"""The API reference covers the public face, and the verbs' docstrings state their contract."""

import inspect
import re
from pathlib import Path

import pytest

import sotopia_are as sa

ROOT = Path(__file__).resolve().parents[2]
VERBS = ["run", "arun", "rate", "arate", "batch", "connect", "rate_stored", "spec_from_profiles"]


def test_the_api_index_lists_every_public_name_once() -> None:
    text = (ROOT / "docs" / "api" / "index.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    listed = [name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])]
    assert sorted(listed) == sorted(set(sa.__all__) - {"__version__"})
    assert len(listed) == len(set(listed))


@pytest.mark.parametrize("verb", VERBS)
def test_a_verb_documents_its_parameters_return_errors_and_an_example(verb: str) -> None:
    function = getattr(sa, verb)
    doc = inspect.getdoc(function) or ""
    for section in ("Args:", "Returns:", "Raises:", "Example:"):
        assert f"\n{section}\n" in doc, (verb, section)
    documented = set(re.findall(r"^    (\w+):", doc.split("Returns:")[0], re.M))
    assert documented == set(inspect.signature(function).parameters), verb
