"""Importing a scenario file together with the Python code its apps live in.

A file names its apps by class name; the classes come from Python files or modules the
user names (``sotopia-are scenario --apps``). :func:`import_scenario` loads those, registers
their App classes next to the default ones, and imports the file; the file's references
may point into those modules and no others (see :mod:`.importer`).
"""

import importlib
import importlib.util
import inspect
import logging
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from sotopia_are import SotopiaAreError
from sotopia_are.simulation.apps.app import App
from sotopia_are.simulation.apps.registry import default_app_registry
from sotopia_are.simulation.scenarios.scenario_imported_from_json import (
    ScenarioImportedFromJson,
)
from sotopia_are.simulation.types import CompletedEvent

from .importer import JsonScenarioImporter

__all__ = ["AppSourceError", "import_scenario", "importer_with_apps", "load_app_module"]


class AppSourceError(SotopiaAreError, ValueError):
    """A Python file or module of App classes cannot be loaded, or one of its classes
    cannot be registered. ``source`` is as given; the message is ``"<source>: <reason>"``."""

    def __init__(self, source: str, reason: str) -> None:
        self.source = source
        self.reason = reason
        super().__init__(f"{source}: {reason}")


def load_app_module(source: str) -> ModuleType:
    """The module ``source`` names: a Python file (a path ending in ``.py``, an existing
    file, or anything that is not a dotted module name, such as ``../apps``), else an
    importable module. A file becomes the module named by its stem, kept in
    ``sys.modules`` so that ``module:function`` references into it resolve; loading the
    same file again gives the same module. :class:`AppSourceError` if it cannot be loaded.
    """
    path = Path(source)
    if source.endswith(".py") or path.is_file() or not _is_module_name(source):
        return _load_file(source, path)
    try:
        return importlib.import_module(source)
    except ModuleNotFoundError as error:
        # Only when ``source`` itself (or a package on its way) is missing; a module that
        # exists but imports a missing one is reported as it is.
        if error.name is not None and f"{source}.".startswith(f"{error.name}."):
            raise AppSourceError(source, "no such Python file or module") from error
        raise AppSourceError(source, f"{type(error).__name__}: {error}") from error
    except Exception as error:
        raise AppSourceError(source, f"{type(error).__name__}: {error}") from error


def importer_with_apps(sources: Iterable[str]) -> JsonScenarioImporter:
    """An importer knowing the default registry's App classes plus those defined in the
    modules of ``sources`` (see :func:`load_app_module`), whose files may refer into those
    modules. :class:`AppSourceError` if a source cannot be loaded or one of its classes'
    names already means another class."""
    registry = default_app_registry.copy()
    modules = []
    for source in sources:
        module = load_app_module(source)
        modules.append(module)
        for _, member in inspect.getmembers(module, inspect.isclass):
            if issubclass(member, App) and member.__module__ == module.__name__:
                try:
                    registry.register(member)
                except ValueError as error:
                    raise AppSourceError(source, str(error)) from error
    return JsonScenarioImporter(registry, modules)


def import_scenario(
    text: str | bytes,
    *,
    apps: Sequence[str] = (),
    apps_to_skip: Sequence[str] | None = None,
    skip_unknown_apps: bool = False,
    lenient: bool = False,
) -> tuple[ScenarioImportedFromJson, list[CompletedEvent]]:
    """The scenario in ``text`` and its completed events, imported with the App classes of
    ``apps`` (see :func:`importer_with_apps`) and the options of
    :meth:`JsonScenarioImporter.import_from_json`. What was left out is on
    ``scenario.import_report`` and not logged. An app class that is not available is an
    error here (``strict_apps``) unless ``skip_unknown_apps``: a run must not quietly drop
    the events of apps it lacks. :class:`AppSourceError` for an app source,
    :class:`~.errors.ScenarioFormatError` for the file."""
    importer = importer_with_apps(apps)
    with _importer_log_muted():
        scenario, completed, _ = importer.import_from_json(
            text,
            apps_to_skip=apps_to_skip,
            skip_unknown_apps=skip_unknown_apps,
            lenient=lenient,
            strict_apps=True,
        )
    return scenario, completed


def _is_module_name(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))


def _load_file(source: str, path: Path) -> ModuleType:
    if not path.is_file():
        raise AppSourceError(source, "no such Python file")
    found = importlib.util.spec_from_file_location(path.stem, path)
    if found is None or found.loader is None:
        raise AppSourceError(source, "not a Python file (.py)")
    loaded = sys.modules.get(path.stem)
    if loaded is not None:
        where = getattr(loaded, "__file__", None)
        if where is not None and Path(where).resolve() == path.resolve():
            return loaded
        # Replacing it would change what every importer of that name gets.
        raise AppSourceError(
            source,
            f"a module named {path.stem!r} is already imported "
            f"(from {where or 'the Python installation'}); rename the file",
        )
    module = importlib.util.module_from_spec(found)
    sys.modules[path.stem] = module
    try:
        found.loader.exec_module(module)
    except Exception as error:
        sys.modules.pop(path.stem, None)
        raise AppSourceError(source, f"{type(error).__name__}: {error}") from error
    return module


@contextmanager
def _importer_log_muted() -> Iterator[None]:
    """Drop the importer's log records meanwhile (from every thread): the caller has the
    report they would repeat."""
    log = logging.getLogger(JsonScenarioImporter.__module__)

    def drop(record: logging.LogRecord) -> bool:
        return False

    log.addFilter(drop)
    try:
        yield
    finally:
        log.removeFilter(drop)
