"""What a study does, as library verbs: run, rate and batch episodes, specs from profiles.

The command line is a thin wrapper over these; a Python script uses them directly (see
``import sotopia_are as sa``).
"""

from .batch import (
    BatchEpisode,
    BatchError,
    BatchPlan,
    BatchProgress,
    BatchResult,
    EpisodeOutcome,
    StoredBatch,
    batch,
    plan_batch,
    read_specs,
    stored_batch,
)
from .files import ImportedFile, ImportKind, export_are_files, import_file
from .profiles import agent_background, spec_from_profiles, spec_from_stored_profiles
from .rating import arate, arate_script, rate, rate_script, script_record
from .rerating import RatingOutcome, arate_stored, rate_stored
from .running import arun, mark_stopped, run
from .scenarios import (
    LoadedScenario,
    ScenarioLoadError,
    ScenarioRun,
    load_scenario,
    run_scenario,
)
from .script_context import script_context

__all__ = [
    "BatchEpisode",
    "BatchError",
    "BatchPlan",
    "BatchProgress",
    "BatchResult",
    "EpisodeOutcome",
    "ImportKind",
    "ImportedFile",
    "LoadedScenario",
    "RatingOutcome",
    "ScenarioLoadError",
    "ScenarioRun",
    "StoredBatch",
    "agent_background",
    "arate",
    "arate_script",
    "arate_stored",
    "arun",
    "batch",
    "export_are_files",
    "import_file",
    "load_scenario",
    "mark_stopped",
    "plan_batch",
    "rate",
    "rate_script",
    "rate_stored",
    "read_specs",
    "run",
    "run_scenario",
    "script_context",
    "script_record",
    "spec_from_profiles",
    "spec_from_stored_profiles",
    "stored_batch",
]
