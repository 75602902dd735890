"""A scenario file of a benchmark: an imported scenario plus where on the Hub it comes from."""

from sotopia_are.simulation.data_handler.models import ExportedHuggingFaceMetadata
from sotopia_are.simulation.scenarios.scenario_imported_from_json.scenario import (
    ScenarioImportedFromJson,
)

__all__ = ["BenchmarkScenarioImportedFromJson"]


class BenchmarkScenarioImportedFromJson(ScenarioImportedFromJson):
    """An imported scenario with its Hugging Face dataset, split and revision (if any)."""

    hf_metadata: ExportedHuggingFaceMetadata | None = None
