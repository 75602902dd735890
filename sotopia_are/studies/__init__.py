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
from .batch_report import (
    BatchProgress,
    StoredBatch,
    describe_plan,
    stored_batch,
    summary_rows,
    unfinished_causes,
)
from .files import (
    ExportFormat,
    ImportedFile,
    ImportKind,
    export_are_files,
    export_text,
    import_file,
    selected_episodes,
)
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
    "ExportFormat",
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
    "describe_plan",
    "export_are_files",
    "export_text",
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
    "selected_episodes",
    "spec_from_profiles",
    "spec_from_stored_profiles",
    "stored_batch",
    "summary_rows",
    "unfinished_causes",
]
