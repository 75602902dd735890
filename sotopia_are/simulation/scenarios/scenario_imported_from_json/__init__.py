"""Scenarios read from ARE's scenario JSON format (see ``data_handler.importer``)."""

from sotopia_are.simulation.scenarios.scenario_imported_from_json.benchmark_scenario import (
    BenchmarkScenarioImportedFromJson,
)
from sotopia_are.simulation.scenarios.scenario_imported_from_json.scenario import (
    ImportReport,
    ScenarioImportedFromJson,
)

__all__ = ["BenchmarkScenarioImportedFromJson", "ImportReport", "ScenarioImportedFromJson"]
