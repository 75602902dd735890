"""sotopia_are: multi-agent social simulation on a discrete-event kernel.

Everything a study needs is on this one name::

    import sotopia_are as sa

    record = sa.run(spec, models="gpt-4o-mini", judge=sa.LLMJudge("gpt-4o"), store=sa.connect())
    again = sa.rate(record, sa.LLMJudge("claude-3-5-sonnet-latest"), store=store)

The verbs (:func:`run`, :func:`rate`, …) play, rate and store episodes and hand back the
one :class:`EpisodeRecord`; the nouns are the values they take and give. Names load on
first use (PEP 562), so ``import sotopia_are`` stays cheap: litellm, redis and the CLI
libraries load only when a name that needs them is used. The seed contracts' names stay
at their Sotopia and ARE import paths too (``sotopia_are.messages``,
``sotopia_are.simulation.environment``, …).
"""

from __future__ import annotations

import gc
import importlib
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"


# Defined here, not in a layer's module: messages, simulation and llm import nothing of ours
# (DESIGN.md), but every module may import the package itself, which loads nothing eagerly.
class SotopiaAreError(Exception):
    """The base of every error sotopia_are raises: ``except sa.SotopiaAreError`` catches
    them all, and the CLI reports exactly these as ``error: …`` lines (anything else is a
    bug). Each error also keeps its built-in base (a bad rubric is a ``ValueError`` too);
    the tree is in :mod:`sotopia_are.studies.errors`."""


# name -> the module it lives in; the one list of the public face.
_EXPORTS: dict[str, str] = {
    # verbs
    "run": "sotopia_are.studies",
    "arun": "sotopia_are.studies",
    "rate": "sotopia_are.studies",
    "arate": "sotopia_are.studies",
    "rate_script": "sotopia_are.studies",
    "arate_script": "sotopia_are.studies",
    "rate_stored": "sotopia_are.studies",
    "batch": "sotopia_are.studies",
    "StudyConfig": "sotopia_are.studies",
    "connect": "sotopia_are.storage",
    "load_record": "sotopia_are.record",
    "spec_from_profiles": "sotopia_are.studies",
    "parse_script": "sotopia_are.messages",
    # episodes and records
    "EpisodeSpec": "sotopia_are.social",
    "EpisodeRecord": "sotopia_are.record",
    "EpisodeStatus": "sotopia_are.social",
    "Verdict": "sotopia_are.record",
    "Usage": "sotopia_are.llm",
    "EpisodeStore": "sotopia_are.storage",
    "AgentProfile": "sotopia_are.storage",
    "EnvironmentProfile": "sotopia_are.storage",
    "RelationshipProfile": "sotopia_are.storage",
    # games
    "GameSpec": "sotopia_are.games",
    "GameJudge": "sotopia_are.games",
    # Sotopia's messages
    "AgentAction": "sotopia_are.messages",
    "ScriptBackground": "sotopia_are.messages",
    "ScriptEnvironmentResponse": "sotopia_are.messages",
    # agents
    "LLMAgent": "sotopia_are.agents",
    "ScriptedAgent": "sotopia_are.agents",
    "HumanAgent": "sotopia_are.agents",
    "ScriptWritingAgent": "sotopia_are.agents",
    "llm_agents_for": "sotopia_are.agents",
    # judging
    "LLMJudge": "sotopia_are.evaluation",
    "Rubric": "sotopia_are.evaluation",
    "Dimension": "sotopia_are.evaluation",
    "SOTOPIA_EVAL": "sotopia_are.evaluation",
    "GOAL_ONLY": "sotopia_are.evaluation",
    # models
    "LLMConfig": "sotopia_are.llm",
    "LLMSession": "sotopia_are.llm",
    "Sampling": "sotopia_are.llm",
    # errors (the tree: sotopia_are.studies.errors)
    "SotopiaAreError": "sotopia_are",
    "LLMError": "sotopia_are.llm",
    "ConfigurationError": "sotopia_are.llm",
    "GenerationError": "sotopia_are.llm",
    "PermanentLLMError": "sotopia_are.llm",
    "TransientLLMError": "sotopia_are.llm",
    "StorageError": "sotopia_are.storage",
    "RecordNotFoundError": "sotopia_are.storage",
    "ScriptParseError": "sotopia_are.messages",
    "RecordVersionError": "sotopia_are.record",
    "VerdictExistsError": "sotopia_are.record",
    "StudyInputError": "sotopia_are.studies",
    "RubricError": "sotopia_are.evaluation",
}

# Spelled out (sorted), not built from _EXPORTS, so that tools read it; a test keeps the
# two equal.
__all__ = [
    "GOAL_ONLY",
    "SOTOPIA_EVAL",
    "AgentAction",
    "AgentProfile",
    "ConfigurationError",
    "Dimension",
    "EnvironmentProfile",
    "EpisodeRecord",
    "EpisodeSpec",
    "EpisodeStatus",
    "EpisodeStore",
    "GameJudge",
    "GameSpec",
    "GenerationError",
    "HumanAgent",
    "LLMAgent",
    "LLMConfig",
    "LLMError",
    "LLMJudge",
    "LLMSession",
    "PermanentLLMError",
    "RecordNotFoundError",
    "RecordVersionError",
    "RelationshipProfile",
    "Rubric",
    "RubricError",
    "Sampling",
    "ScriptBackground",
    "ScriptEnvironmentResponse",
    "ScriptParseError",
    "ScriptWritingAgent",
    "ScriptedAgent",
    "SotopiaAreError",
    "StorageError",
    "StudyConfig",
    "StudyInputError",
    "TransientLLMError",
    "Usage",
    "Verdict",
    "VerdictExistsError",
    "__version__",
    "arate",
    "arate_script",
    "arun",
    "batch",
    "connect",
    "llm_agents_for",
    "load_record",
    "parse_script",
    "rate",
    "rate_script",
    "rate_stored",
    "run",
    "spec_from_profiles",
]

if TYPE_CHECKING:
    from sotopia_are.agents import (
        HumanAgent,
        LLMAgent,
        ScriptedAgent,
        ScriptWritingAgent,
        llm_agents_for,
    )
    from sotopia_are.evaluation import (
        GOAL_ONLY,
        SOTOPIA_EVAL,
        Dimension,
        LLMJudge,
        Rubric,
        RubricError,
    )
    from sotopia_are.games import GameJudge, GameSpec
    from sotopia_are.llm import (
        ConfigurationError,
        GenerationError,
        LLMConfig,
        LLMError,
        LLMSession,
        PermanentLLMError,
        Sampling,
        TransientLLMError,
        Usage,
    )
    from sotopia_are.messages import (
        AgentAction,
        ScriptBackground,
        ScriptEnvironmentResponse,
        ScriptParseError,
        parse_script,
    )
    from sotopia_are.record import (
        EpisodeRecord,
        RecordVersionError,
        Verdict,
        VerdictExistsError,
        load_record,
    )
    from sotopia_are.social import EpisodeSpec, EpisodeStatus
    from sotopia_are.storage import (
        AgentProfile,
        EnvironmentProfile,
        EpisodeStore,
        RecordNotFoundError,
        RelationshipProfile,
        StorageError,
        connect,
    )
    from sotopia_are.studies import (
        StudyConfig,
        StudyInputError,
        arate,
        arate_script,
        arun,
        rate,
        rate_script,
        rate_stored,
        run,
        spec_from_profiles,
    )

    # From its module: with every layer importing SotopiaAreError from this package, mypy
    # reads `from sotopia_are.studies import batch` as the submodule of that name.
    from sotopia_are.studies.batch import batch


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sotopia_are' has no attribute {name!r}")
    value = getattr(_import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


def _import_module(name: str) -> types.ModuleType:
    """``importlib.import_module(name)`` under :class:`_CollectorPaused`: what the lazy
    names of this package and of ``studies`` load their modules with."""
    with _CollectorPaused():
        return importlib.import_module(name)


class _CollectorPaused:
    """The garbage collector paused for a ``with`` block, then as it was (a paused one
    stays paused): for a block that loads many modules.

    Modules' objects live as long as the process and make no cyclic garbage, so the
    collections their allocations set off walk an ever larger heap in vain: some 100 M
    instructions of a batch driver's start, which loads about 700 modules. (A class, not
    ``contextlib.contextmanager``: this package loads nothing it can do without.)"""

    def __enter__(self) -> None:
        self.running = gc.isenabled()
        gc.disable()

    def __exit__(self, *_: object) -> None:
        if self.running:
            gc.enable()
