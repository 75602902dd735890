"""Run ARE code on this kernel: an import hook mapping ``are.simulation.X`` to ours.

After :func:`install`, ``import are.simulation.X`` gives ``sotopia_are.simulation.X``
(the same module object, so ARE code and ours share classes) wherever this project has
that module; every other ARE module — its apps, ``utils``, agents' data classes — loads
from ARE's own installed source (the ``meta-agents-research-environments`` wheel) on top
of ours. A package both have (``apps``, ``scenarios``, ``data_handler``) runs ARE's
``__init__`` when ARE is installed, and its submodules resolve one by one by the same
rule; without ARE installed, only our modules are there. So an ARE user's apps and tests
run unchanged::

    from sotopia_are.simulation import compat
    compat.install()
    from are.simulation.apps.email_client import EmailClientApp   # ARE's app
    from are.simulation.environment import Environment             # our kernel

``python -m sotopia_are.simulation.compat -- pytest ...`` runs a command's Python code
with the hook installed (see docs/are-compatibility.md).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["AreCompatFinder", "install", "installed", "uninstall"]

_ARE = "are"
_OURS = "sotopia_are"


def _ours(fullname: str) -> str | None:
    """Our module name for the ARE module ``fullname`` (None for ``are`` itself)."""
    if fullname.startswith("are.simulation"):
        return _OURS + fullname[len(_ARE) :]
    return None


class _Alias(importlib.abc.Loader):
    """Loads an ARE module name as our already-importable module object."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported under its own name."""


class AreCompatFinder(importlib.abc.MetaPathFinder):
    """Finds ``are.simulation.*`` modules: ours where we have one, else ARE's source.

    ``are_paths`` are the directories holding ARE's own ``are`` package (found on
    ``sys.path`` by :func:`install`); with none, ARE's source is not used.
    """

    def __init__(self, are_paths: Sequence[str]) -> None:
        self.are_paths = list(are_paths)

    def _are_has_package(self, fullname: str) -> bool:
        parts = fullname.split(".")
        for root in self.are_paths:
            spec = importlib.machinery.PathFinder.find_spec(parts[0], [root])
            for depth in range(1, len(parts)):
                if spec is None or not spec.submodule_search_locations:
                    break
                locations = list(spec.submodule_search_locations)
                spec = importlib.machinery.PathFinder.find_spec(
                    ".".join(parts[: depth + 1]), locations
                )
            if spec is not None and spec.submodule_search_locations is not None:
                return True
        return False

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == _ARE:
            if self.are_paths:
                return None  # ARE's own top-level package
            return importlib.machinery.ModuleSpec(fullname, None, is_package=True)
        ours = _ours(fullname)
        if ours is None:
            return None
        try:
            spec = importlib.util.find_spec(ours)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            return None  # ARE's own source, if installed (the default finders)
        is_package = spec.submodule_search_locations is not None
        if is_package and self._are_has_package(fullname):
            return None  # ARE's package: its __init__, its submodules through us
        return importlib.machinery.ModuleSpec(fullname, _Alias(ours), is_package=is_package)


def installed() -> AreCompatFinder | None:
    """The installed hook, if any."""
    for finder in sys.meta_path:
        if isinstance(finder, AreCompatFinder):
            return finder
    return None


def install() -> AreCompatFinder:
    """Map ``are.simulation.*`` imports onto this kernel (idempotent); returns the hook.

    RuntimeError if ARE's kernel modules were imported before (they would be ARE's,
    not ours, and ARE code would mix the two).
    """
    finder = installed()
    if finder is not None:
        return finder
    loaded = sorted(
        name
        for name in sys.modules
        if name.startswith("are.simulation")
        and importlib.util.find_spec(_ours(name) or "") is not None
    )
    if loaded:
        raise RuntimeError(
            "install() must run before ARE's modules are imported; already imported: "
            + ", ".join(loaded[:5])
        )
    are_paths = [
        entry
        for entry in sys.path
        if importlib.machinery.PathFinder.find_spec(_ARE, [entry or "."]) is not None
    ]
    finder = AreCompatFinder(are_paths)
    sys.meta_path.insert(0, finder)
    return finder


def uninstall() -> None:
    """Remove the hook and forget every ``are`` module imported through it."""
    finder = installed()
    if finder is None:
        return
    sys.meta_path.remove(finder)
    for name in [n for n in sys.modules if n == _ARE or n.startswith(_ARE + ".")]:
        del sys.modules[name]


def _main(argv: list[str]) -> int:
    """``python -m sotopia_are.simulation.compat [--] MODULE ARGS…``: run ``python -m
    MODULE ARGS…`` (e.g. pytest) with the hook installed."""
    import runpy

    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print("usage: python -m sotopia_are.simulation.compat [--] MODULE [ARGS...]")
        return 2
    install()
    sys.argv = argv
    try:
        runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
    except SystemExit as done:
        return int(done.code or 0) if not isinstance(done.code, str) else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
