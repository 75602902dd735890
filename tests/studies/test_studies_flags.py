"""The light flags module restates the lower layers' values; these hold them equal, and the
studies package keeps its verbs under their names once their submodules are imported."""

import importlib
import subprocess
import sys
from pathlib import Path
from typing import get_args

from sotopia_are import EpisodeStatus, llm, storage
from sotopia_are.studies import flags


def test_flags_restate_the_llm_and_storage_values() -> None:
    assert llm.LLMConfig().timeout_s == flags.DEFAULT_TIMEOUT_S
    assert llm.RetryPolicy().max_attempts == flags.DEFAULT_REQUEST_ATTEMPTS
    assert get_args(flags.OutputMode) == get_args(llm.OutputMode)
    assert get_args(flags.TransportChoice) == get_args(llm.TransportChoice)
    assert [c.value for c in flags.StatusChoice] == [s.value for s in EpisodeStatus]
    variables = {variable for _, variable in flags.STUDY_FLAGS.values() if variable}
    assert variables == {
        storage.DATA_DIR_ENV,
        flags.MODEL_ENV,
        flags.JUDGE_MODEL_ENV,
        llm.AGENT_SAMPLING_ENV,
        llm.JUDGE_SAMPLING_ENV,
        llm.API_BASE_ENV,
        llm.API_KEY_ENV,
        llm.TIMEOUT_ENV,
        llm.REQUEST_ATTEMPTS_ENV,
        llm.TRANSPORT_ENV,
    }


def test_the_verbs_keep_their_names_after_their_submodules_load() -> None:
    # Every submodule named as a name the package exports is one of the four.
    package = importlib.import_module("sotopia_are.studies")
    modules = {path.stem for path in Path(package.__file__ or "").parent.glob("*.py")}
    assert modules & set(package.__all__) == {"agreement", "batch", "benchmark", "script_context"}
    # In a fresh interpreter: here the package may have loaded already.
    code = (
        "import sotopia_are.studies as s, importlib, types\n"
        "for name in ('batch', 'benchmark', 'agreement', 'script_context'):\n"
        "    module = importlib.import_module('sotopia_are.studies.' + name)\n"
        "    assert callable(getattr(s, name)), name\n"
        "    assert not isinstance(getattr(s, name), types.ModuleType), name\n"
        "    assert getattr(s, name) is getattr(module, name), name\n"
        "from sotopia_are.studies import batch, benchmark, agreement\n"
        "assert not any(isinstance(v, types.ModuleType) for v in (batch, benchmark, agreement))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    studies = importlib.import_module("sotopia_are.studies")
    for name in ("batch", "benchmark", "agreement", "script_context"):
        assert getattr(studies, name).__module__ == f"sotopia_are.studies.{name}"


def test_importing_the_package_loads_no_submodule() -> None:
    code = (
        "import sys, sotopia_are.studies\n"
        "loaded = [m for m in sys.modules if m.startswith('sotopia_are.') and "
        "m != 'sotopia_are.studies']\n"
        "assert not loaded, loaded\n"
        "assert 'litellm' not in sys.modules and 'redis' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
