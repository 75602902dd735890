"""What a study does, as library verbs: run, rate and batch episodes, specs from profiles.

The command line is a thin wrapper over these; a Python script uses them directly (see
``import sotopia_are as sa``). It also names the few values of the lower layers the
command line reads (entries, summaries, script actions, their errors), so that the CLI
imports only the face, these verbs and the front ends (DESIGN.md, ``--cli-face``).

Names load on first use (PEP 562), as the face's do: the command line builds its help
from this package without loading litellm, redis or pydantic models.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from sotopia_are import _import_module

if TYPE_CHECKING:
    from sotopia_are.messages import ScriptAction, parse_script_notes
    from sotopia_are.record import EpisodeSummary
    from sotopia_are.social import ConversationEntry, SocialAgent, fresh_episode_id
    from sotopia_are.storage import EpisodeExistsError, UnreadableRecordError

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
    from .config import (
        AGENT_SAMPLING_ENV,
        API_BASE_ENV,
        API_KEY_ENV,
        DATA_DIR_ENV,
        JUDGE_SAMPLING_ENV,
        REQUEST_ATTEMPTS_ENV,
        TIMEOUT_ENV,
        TRANSPORT_ENV,
        OutputMode,
        StudyConfig,
        TransportChoice,
        choose_agent_models,
        choose_judge,
        choose_judges,
        judge_names,
        judge_sampling,
        llm_config,
        make_judges,
        parse_sampling,
    )
    from .errors import StudyInputError
    from .files import (
        ExportFormat,
        ImportedFile,
        ImportKind,
        export_are_file,
        export_are_files,
        export_text,
        export_to,
        import_file,
        selected_episodes,
        write_text_atomically,
    )
    from .flags import (
        DEFAULT_REQUEST_ATTEMPTS,
        DEFAULT_TIMEOUT_S,
        JUDGE_MODEL_ENV,
        MODEL_ENV,
        STUDY_FLAGS,
    )
    from .game_outcomes import game_outcome, role_in
    from .panel import PanelScore, judge_verdicts, panel_scores
    from .playing import free_judges, play_episode
    from .preflight import check_judges
    from .profiles import agent_background, spec_from_profiles, spec_from_stored_profiles
    from .rating import SCRIPT_TERMINATION, arate, arate_script, rate, rate_script, script_record
    from .report import (
        BenchmarkReport,
        BenchmarkRow,
        DimensionStat,
        ModelResult,
        RoleResult,
        benchmark_report,
        benchmark_rows,
        bootstrap_ci,
        load_results,
        report_of,
    )
    from .rerating import RatingOutcome, arate_stored, check_to_rate, rate_stored
    from .running import arun, fresh_spec, mark_stopped, replay_script, run
    from .scenarios import (
        LoadedScenario,
        ScenarioLoadError,
        ScenarioRun,
        load_scenario,
        run_scenario,
    )
    from .script_context import script_context
    from .tasks import Task, TaskSet, read_task_set, sample_tasks, select_tasks

_EXPORTS: dict[str, str] = {
    "ScriptAction": "sotopia_are.messages",
    "parse_script_notes": "sotopia_are.messages",
    "EpisodeSummary": "sotopia_are.record",
    "ConversationEntry": "sotopia_are.social",
    "SocialAgent": "sotopia_are.social",
    "fresh_episode_id": "sotopia_are.social",
    "EpisodeExistsError": "sotopia_are.storage",
    "UnreadableRecordError": "sotopia_are.storage",
    "AgreementError": "sotopia_are.studies.agreement",
    "AgreementReport": "sotopia_are.studies.agreement",
    "DimensionAgreement": "sotopia_are.studies.agreement",
    "HumanRatings": "sotopia_are.studies.agreement",
    "LabelledEpisode": "sotopia_are.studies.agreement",
    "agreement": "sotopia_are.studies.agreement",
    "labelled_scripts": "sotopia_are.studies.agreement",
    "read_human_ratings": "sotopia_are.studies.agreement",
    "stored_agreement": "sotopia_are.studies.agreement",
    "BatchEpisode": "sotopia_are.studies.batch",
    "BatchError": "sotopia_are.studies.batch",
    "BatchPlan": "sotopia_are.studies.batch",
    "BatchResult": "sotopia_are.studies.batch",
    "EpisodeOutcome": "sotopia_are.studies.batch",
    "batch": "sotopia_are.studies.batch",
    "plan_batch": "sotopia_are.studies.batch",
    "read_specs": "sotopia_are.studies.batch",
    "BatchProgress": "sotopia_are.studies.batch_report",
    "StoredBatch": "sotopia_are.studies.batch_report",
    "describe_plan": "sotopia_are.studies.batch_report",
    "stored_batch": "sotopia_are.studies.batch_report",
    "summary_rows": "sotopia_are.studies.batch_report",
    "unfinished_causes": "sotopia_are.studies.batch_report",
    "BenchmarkResult": "sotopia_are.studies.benchmark",
    "benchmark": "sotopia_are.studies.benchmark",
    "benchmark_specs": "sotopia_are.studies.benchmark",
    "AGENT_SAMPLING_ENV": "sotopia_are.studies.config",
    "API_BASE_ENV": "sotopia_are.studies.config",
    "API_KEY_ENV": "sotopia_are.studies.config",
    "DATA_DIR_ENV": "sotopia_are.studies.config",
    "DEFAULT_REQUEST_ATTEMPTS": "sotopia_are.studies.flags",
    "DEFAULT_TIMEOUT_S": "sotopia_are.studies.flags",
    "JUDGE_MODEL_ENV": "sotopia_are.studies.flags",
    "JUDGE_SAMPLING_ENV": "sotopia_are.studies.config",
    "MODEL_ENV": "sotopia_are.studies.flags",
    "REQUEST_ATTEMPTS_ENV": "sotopia_are.studies.config",
    "STUDY_FLAGS": "sotopia_are.studies.flags",
    "TIMEOUT_ENV": "sotopia_are.studies.config",
    "TRANSPORT_ENV": "sotopia_are.studies.config",
    "OutputMode": "sotopia_are.studies.config",
    "StudyConfig": "sotopia_are.studies.config",
    "TransportChoice": "sotopia_are.studies.config",
    "choose_agent_models": "sotopia_are.studies.config",
    "choose_judge": "sotopia_are.studies.config",
    "choose_judges": "sotopia_are.studies.config",
    "judge_names": "sotopia_are.studies.config",
    "judge_sampling": "sotopia_are.studies.config",
    "llm_config": "sotopia_are.studies.config",
    "make_judges": "sotopia_are.studies.config",
    "parse_sampling": "sotopia_are.studies.config",
    "StudyInputError": "sotopia_are.studies.errors",
    "ExportFormat": "sotopia_are.studies.flags",
    "ImportedFile": "sotopia_are.studies.files",
    "ImportKind": "sotopia_are.studies.flags",
    "export_are_file": "sotopia_are.studies.files",
    "export_are_files": "sotopia_are.studies.files",
    "export_text": "sotopia_are.studies.files",
    "export_to": "sotopia_are.studies.files",
    "import_file": "sotopia_are.studies.files",
    "selected_episodes": "sotopia_are.studies.files",
    "write_text_atomically": "sotopia_are.studies.files",
    "game_outcome": "sotopia_are.studies.game_outcomes",
    "role_in": "sotopia_are.studies.game_outcomes",
    "PanelScore": "sotopia_are.studies.panel",
    "judge_verdicts": "sotopia_are.studies.panel",
    "panel_scores": "sotopia_are.studies.panel",
    "free_judges": "sotopia_are.studies.playing",
    "play_episode": "sotopia_are.studies.playing",
    "check_judges": "sotopia_are.studies.preflight",
    "agent_background": "sotopia_are.studies.profiles",
    "spec_from_profiles": "sotopia_are.studies.profiles",
    "spec_from_stored_profiles": "sotopia_are.studies.profiles",
    "SCRIPT_TERMINATION": "sotopia_are.studies.rating",
    "arate": "sotopia_are.studies.rating",
    "arate_script": "sotopia_are.studies.rating",
    "rate": "sotopia_are.studies.rating",
    "rate_script": "sotopia_are.studies.rating",
    "script_record": "sotopia_are.studies.rating",
    "BenchmarkReport": "sotopia_are.studies.report",
    "BenchmarkRow": "sotopia_are.studies.report",
    "DimensionStat": "sotopia_are.studies.report",
    "ModelResult": "sotopia_are.studies.report",
    "RoleResult": "sotopia_are.studies.report",
    "benchmark_report": "sotopia_are.studies.report",
    "benchmark_rows": "sotopia_are.studies.report",
    "bootstrap_ci": "sotopia_are.studies.report",
    "load_results": "sotopia_are.studies.report",
    "report_of": "sotopia_are.studies.report",
    "RatingOutcome": "sotopia_are.studies.rerating",
    "arate_stored": "sotopia_are.studies.rerating",
    "check_to_rate": "sotopia_are.studies.rerating",
    "rate_stored": "sotopia_are.studies.rerating",
    "arun": "sotopia_are.studies.running",
    "fresh_spec": "sotopia_are.studies.running",
    "mark_stopped": "sotopia_are.studies.running",
    "replay_script": "sotopia_are.studies.running",
    "run": "sotopia_are.studies.running",
    "LoadedScenario": "sotopia_are.studies.scenarios",
    "ScenarioLoadError": "sotopia_are.studies.scenarios",
    "ScenarioRun": "sotopia_are.studies.scenarios",
    "load_scenario": "sotopia_are.studies.scenarios",
    "run_scenario": "sotopia_are.studies.scenarios",
    "script_context": "sotopia_are.studies.script_context",
    "Task": "sotopia_are.studies.tasks",
    "TaskSet": "sotopia_are.studies.tasks",
    "read_task_set": "sotopia_are.studies.tasks",
    "sample_tasks": "sotopia_are.studies.tasks",
    "select_tasks": "sotopia_are.studies.tasks",
}
"""Every exported name and the module that defines it."""

__all__ = [
    "AGENT_SAMPLING_ENV",
    "API_BASE_ENV",
    "API_KEY_ENV",
    "DATA_DIR_ENV",
    "DEFAULT_REQUEST_ATTEMPTS",
    "DEFAULT_TIMEOUT_S",
    "JUDGE_MODEL_ENV",
    "JUDGE_SAMPLING_ENV",
    "MODEL_ENV",
    "REQUEST_ATTEMPTS_ENV",
    "SCRIPT_TERMINATION",
    "STUDY_FLAGS",
    "TIMEOUT_ENV",
    "TRANSPORT_ENV",
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
    "ConversationEntry",
    "DimensionAgreement",
    "DimensionStat",
    "EpisodeExistsError",
    "EpisodeOutcome",
    "EpisodeSummary",
    "ExportFormat",
    "HumanRatings",
    "ImportKind",
    "ImportedFile",
    "LabelledEpisode",
    "LoadedScenario",
    "ModelResult",
    "OutputMode",
    "PanelScore",
    "RatingOutcome",
    "RoleResult",
    "ScenarioLoadError",
    "ScenarioRun",
    "ScriptAction",
    "SocialAgent",
    "StoredBatch",
    "StudyConfig",
    "StudyInputError",
    "Task",
    "TaskSet",
    "TransportChoice",
    "UnreadableRecordError",
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
    "check_to_rate",
    "choose_agent_models",
    "choose_judge",
    "choose_judges",
    "describe_plan",
    "export_are_file",
    "export_are_files",
    "export_text",
    "export_to",
    "free_judges",
    "fresh_episode_id",
    "fresh_spec",
    "game_outcome",
    "import_file",
    "judge_names",
    "judge_sampling",
    "judge_verdicts",
    "labelled_scripts",
    "llm_config",
    "load_results",
    "load_scenario",
    "make_judges",
    "mark_stopped",
    "panel_scores",
    "parse_sampling",
    "parse_script_notes",
    "plan_batch",
    "play_episode",
    "rate",
    "rate_script",
    "rate_stored",
    "read_human_ratings",
    "read_specs",
    "read_task_set",
    "replay_script",
    "report_of",
    "role_in",
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
    "write_text_atomically",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


class _Package(types.ModuleType):
    """This package, keeping :func:`batch`, :func:`benchmark`, :func:`agreement` and
    :func:`script_context` under their names: importing a submodule sets the package's
    attribute of its name to the submodule (``studies.batch`` the module, not the verb),
    so setting one of these three to its submodule sets the submodule's verb instead."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _VERB_MODULES and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


_VERB_MODULES = frozenset({"agreement", "batch", "benchmark", "script_context"})
"""The submodules named as the verb they define."""

sys.modules[__name__].__class__ = _Package
