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


def test_a_lazy_name_loads_without_collections_and_leaves_the_collector_as_it_was() -> None:
    code = (
        "import gc, sys\n"
        "import sotopia_are as sa\n"
        "from sotopia_are import studies\n"
        "runs = []\n"
        "gc.callbacks.append(lambda phase, info: runs.append(phase))\n"
        "studies.read_specs\n"  # loads the specs' modules (pydantic, the social layer)
        "print(len(runs), gc.isenabled())\n"
        "gc.disable()\n"
        "sa.connect\n"  # the storage layer: redis, redis-om
        "print(gc.isenabled())\n"
        "print('tenacity' in sys.modules, 'sotopia_are.llm.network' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # No collection ran while the specs' modules loaded; a paused collector stayed paused;
    # tenacity waits for a request to fail.
    assert out.stdout.split() == ["0", "True", "False", "False", "True"]
