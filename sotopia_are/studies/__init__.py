"""What a study does, as library verbs: run, rate and batch episodes, specs from profiles.

The command line is a thin wrapper over these; a Python script uses them directly (see
``import sotopia_are as sa``).
"""

from .batch import (
    BatchEpisode,
    BatchError,
    BatchPlan,
    BatchResult,
    EpisodeOutcome,
    batch,
    plan_batch,
    read_specs,
)
from .files import ImportedFile, ImportKind, export_are_files, import_file
from .profiles import agent_background, spec_from_profiles, spec_from_stored_profiles
from .rating import arate, arate_script, rate, rate_script, script_record
from .running import arun, mark_stopped, run
from .scenarios import (
    LoadedScenario,
    ScenarioLoadError,
    ScenarioRun,
    load_scenario,
    run_scenario,
)

__all__ = [
    "BatchEpisode",
    "BatchError",
    "BatchPlan",
    "BatchResult",
    "EpisodeOutcome",
    "ImportKind",
    "ImportedFile",
    "LoadedScenario",
    "ScenarioLoadError",
    "ScenarioRun",
    "agent_background",
    "arate",
    "arate_script",
    "arun",
    "batch",
    "export_are_files",
    "import_file",
    "load_scenario",
    "mark_stopped",
    "plan_batch",
    "rate",
    "rate_script",
    "read_specs",
    "run",
    "run_scenario",
    "script_record",
    "spec_from_profiles",
    "spec_from_stored_profiles",
]
