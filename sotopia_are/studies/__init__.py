"""What a study does, as library verbs: run, rate and batch episodes, specs from profiles.

The command line is a thin wrapper over these; a Python script uses them directly (see
``import sotopia_are as sa``).
"""

from .agreement import (
    AgreementError,
    AgreementReport,
    DimensionAgreement,
    HumanRatings,
    LabelledEpisode,
    agreement,
    labelled_scripts,
    read_human_ratings,
    stored_agreement,
)
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
from .benchmark import BenchmarkResult, benchmark, benchmark_specs
from .errors import StudyInputError
from .files import (
    ExportFormat,
    ImportedFile,
    ImportKind,
    export_are_files,
    export_text,
    import_file,
    selected_episodes,
)
from .panel import PanelScore, judge_verdicts, panel_scores
from .preflight import check_judges
from .profiles import agent_background, spec_from_profiles, spec_from_stored_profiles
from .rating import SCRIPT_TERMINATION, arate, arate_script, rate, rate_script, script_record
from .report import (
    BenchmarkReport,
    BenchmarkRow,
    DimensionStat,
    ModelResult,
    benchmark_report,
    benchmark_rows,
    bootstrap_ci,
    load_results,
    report_of,
)
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
from .tasks import Task, TaskSet, read_task_set, sample_tasks, select_tasks

__all__ = [
    "SCRIPT_TERMINATION",
    "AgreementError",
    "AgreementReport",
    "BatchEpisode",
    "BatchError",
    "BatchPlan",
    "BatchProgress",
    "BatchResult",
    "BenchmarkReport",
    "BenchmarkResult",
    "BenchmarkRow",
    "DimensionAgreement",
    "DimensionStat",
    "EpisodeOutcome",
    "ExportFormat",
    "HumanRatings",
    "ImportKind",
    "ImportedFile",
    "LabelledEpisode",
    "LoadedScenario",
    "ModelResult",
    "PanelScore",
    "RatingOutcome",
    "ScenarioLoadError",
    "ScenarioRun",
    "StoredBatch",
    "StudyInputError",
    "Task",
    "TaskSet",
    "agent_background",
    "agreement",
    "arate",
    "arate_script",
    "arate_stored",
    "arun",
    "batch",
    "benchmark",
    "benchmark_report",
    "benchmark_rows",
    "benchmark_specs",
    "bootstrap_ci",
    "check_judges",
    "describe_plan",
    "export_are_files",
    "export_text",
    "import_file",
    "judge_verdicts",
    "labelled_scripts",
    "load_results",
    "load_scenario",
    "mark_stopped",
    "panel_scores",
    "plan_batch",
    "rate",
    "rate_script",
    "rate_stored",
    "read_human_ratings",
    "read_specs",
    "read_task_set",
    "report_of",
    "run",
    "run_scenario",
    "sample_tasks",
    "script_context",
    "script_record",
    "select_tasks",
    "selected_episodes",
    "spec_from_profiles",
    "spec_from_stored_profiles",
    "stored_agreement",
    "stored_batch",
    "summary_rows",
    "unfinished_causes",
]
