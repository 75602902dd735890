"""The public face: ``import sotopia_are as sa`` gives the curated names, lazily."""

import subprocess
import sys

import sotopia_are as sa
from sotopia_are import _EXPORTS


def test_all_lists_exactly_the_exported_names_and_each_resolves() -> None:
    assert sorted(sa.__all__) == sorted(["__version__", *_EXPORTS])
    # 54 names: the verbs, the nouns (the study's configuration and games among them)
    # and the errors a study catches.
    assert 35 <= len(sa.__all__) <= 54
    for name in sa.__all__:
        assert getattr(sa, name) is not None, name
    assert sorted(dir(sa)) == sorted(sa.__all__)


def test_each_name_is_the_one_at_its_home() -> None:
    from sotopia_are.record import EpisodeRecord
    from sotopia_are.studies import run

    assert sa.EpisodeRecord is EpisodeRecord and sa.run is run


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        sa.not_a_name  # noqa: B018
    except AttributeError as error:
        assert "not_a_name" in str(error)
    else:
        raise AssertionError("no AttributeError")


def test_importing_the_package_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, sotopia_are; "
        "print(sorted(m for m in ('litellm', 'redis', 'typer', 'pydantic', 'jinja2') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
