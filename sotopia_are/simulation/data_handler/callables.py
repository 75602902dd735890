"""Importable references to the Python callables of CONDITION and VALIDATION events.

A condition or validation event runs a Python function, which JSON cannot hold; ARE
silently drops such events from its exports. Here a function is written as the text
``"package.module:qualified.name"`` and found again by that name. Only functions that
can be found again that way are accepted: a module-level function (or a static/class
method reached through module-level classes). Lambdas, closures, bound methods of
objects and functions defined in ``__main__`` are rejected when exporting, so a file is
never written that cannot be read back.

Reading a reference never imports anything: a data file must not run code its user did
not name. It resolves only into modules the caller allows (already imported), and only
to a function defined in that module, not one it merely imported from elsewhere.
"""

import sys
from collections.abc import Callable, Collection
from typing import Any

__all__ = ["callable_reference", "resolve_callable_reference"]


def callable_reference(function: Callable[..., Any]) -> str:
    """Return ``"module:qualname"`` for ``function``; ``ValueError`` if it is not importable."""
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", None)
    shown = getattr(function, "__qualname__", repr(function))
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise ValueError(f"{shown!r} has no module and qualified name to import it by")
    if "<lambda>" in qualname or "<locals>" in qualname:
        raise ValueError(
            f"{module}.{qualname} is a lambda or a nested function; "
            "use a module-level function so the scenario file can import it"
        )
    if module == "__main__":
        raise ValueError(
            f"{qualname} is defined in __main__; move it to an importable module "
            "so the scenario file can import it"
        )
    reference = f"{module}:{qualname}"
    try:
        found = resolve_callable_reference(reference, modules={module})
    except ValueError as error:
        raise ValueError(f"{reference} cannot be imported back: {error}") from None
    if found != function:
        raise ValueError(
            f"importing {reference} gives a different object than the event's function "
            "(is it a bound method or a decorated copy?)"
        )
    return reference


def resolve_callable_reference(reference: str, modules: Collection[str]) -> Callable[..., Any]:
    """The callable named by a ``"module:qualname"`` reference, looked up in the already
    imported module of that name, which must be one of ``modules``.

    ``ValueError`` (naming what is missing) if the text is malformed, the module is not
    one of ``modules`` or not imported, an attribute does not exist, the object is not
    callable, or it is defined in another module.
    """
    module_name, sep, qualname = reference.partition(":")
    if not sep or not module_name or not qualname:
        raise ValueError(f"{reference!r} is not of the form 'package.module:function'")
    module = sys.modules.get(module_name) if module_name in modules else None
    if module is None:
        allowed = ", ".join(sorted(modules)) or "none"
        raise ValueError(
            f"{reference!r} names module {module_name!r}, which is not one of the modules "
            f"loaded for this file ({allowed}); a scenario file imports nothing: load the "
            "module that defines it with --apps (JsonScenarioImporter(modules=[...]))"
        )
    target: Any = module
    for attribute in qualname.split("."):
        try:
            target = getattr(target, attribute)
        except AttributeError:
            raise ValueError(f"{module_name} has no attribute {qualname!r}") from None
    if not callable(target):
        raise ValueError(f"{reference} is not callable")
    if getattr(target, "__module__", None) != module_name:
        raise ValueError(
            f"{reference} is defined in {getattr(target, '__module__', None)!r}, not in "
            f"{module_name!r}; name it where it is defined"
        )
    found: Callable[..., Any] = target
    return found
