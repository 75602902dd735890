"""Which App class a scenario file's ``class_name`` means.

A ``class_name`` is either a name registered here (ARE files use bare names such as
``"CalendarApp"``) or an importable dotted path (``"package.module.ClassName"`` or
``"package.module:ClassName"``). :data:`default_app_registry` is what the importer uses
unless given another registry; tests and embedding code can build their own
:class:`AppRegistry` so that registrations never leak between them.
"""

import importlib
from collections.abc import Callable, Iterator
from typing import TypeVar, overload

from sotopia_are import SotopiaAreError
from sotopia_are.simulation.apps.app import App

__all__ = [
    "AppRegistry",
    "UnknownAppClassError",
    "default_app_registry",
    "register_app_class",
]

AppClassT = TypeVar("AppClassT", bound=type[App])


class UnknownAppClassError(SotopiaAreError, LookupError):
    """No App class goes by this name; the message says how to provide one."""


class AppRegistry:
    """App classes by the name scenario files use for them."""

    def __init__(self, classes: dict[str, type[App]] | None = None) -> None:
        self._classes: dict[str, type[App]] = dict(classes or {})

    def register(self, app_class: type[App], name: str | None = None) -> None:
        """Make ``name`` (default: the class name) mean ``app_class``.

        ``ValueError`` if ``app_class`` is not an App subclass or ``name`` already means
        another class.
        """
        if not (isinstance(app_class, type) and issubclass(app_class, App)):
            raise ValueError(f"{app_class!r} is not a subclass of App")
        key = app_class.__name__ if name is None else name
        known = self._classes.get(key)
        if known is not None and known is not app_class:
            raise ValueError(
                f"app class name {key!r} is already registered for "
                f"{known.__module__}.{known.__qualname__}"
            )
        self._classes[key] = app_class

    def resolve(self, class_name: str) -> type[App]:
        """The App class ``class_name`` means; :class:`UnknownAppClassError` if none."""
        registered = self._classes.get(class_name)
        if registered is not None:
            return registered
        if "." not in class_name and ":" not in class_name:
            raise UnknownAppClassError(
                f"no App class is registered as {class_name!r}; register one with "
                "register_app_class, or name it by an importable path 'package.module.Class'"
            )
        return _import_app_class(class_name)

    def name_of(self, app_class: type[App]) -> str:
        """The name to write for ``app_class``: its registered name, else its import path.

        ``ValueError`` if neither would resolve back to ``app_class`` (e.g. a class defined
        inside a function), since such a file could not be imported.
        """
        for name, registered in self._classes.items():
            if registered is app_class:
                return name
        path = f"{app_class.__module__}.{app_class.__qualname__}"
        try:
            found = _import_app_class(path)
        except UnknownAppClassError:
            found = None
        if found is not app_class:
            raise ValueError(
                f"app class {path} is neither registered nor importable by that path; "
                "register it with register_app_class"
            )
        return path

    def copy(self) -> "AppRegistry":
        """An independent registry with the same registrations."""
        return AppRegistry(self._classes)

    def __contains__(self, class_name: object) -> bool:
        return class_name in self._classes

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._classes))


def _import_app_class(path: str) -> type[App]:
    module_name, sep, attribute = path.partition(":")
    if not sep:
        module_name, _, attribute = path.rpartition(".")
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as error:
        raise UnknownAppClassError(
            f"app class {path!r}: module {module_name!r} cannot be imported ({error})"
        ) from None
    for part in attribute.split("."):
        target = getattr(target, part, None)
    if not (isinstance(target, type) and issubclass(target, App)):
        raise UnknownAppClassError(f"{path!r} is not an App class")
    return target


default_app_registry = AppRegistry()
"""The registry used when no other is given."""


@overload
def register_app_class(app_class: AppClassT, *, name: str | None = None) -> AppClassT: ...


@overload
def register_app_class(
    app_class: None = None, *, name: str | None = None
) -> Callable[[AppClassT], AppClassT]: ...


def register_app_class(
    app_class: AppClassT | None = None, *, name: str | None = None
) -> AppClassT | Callable[[AppClassT], AppClassT]:
    """Register an App class in :data:`default_app_registry`; usable as a decorator.

    ``@register_app_class`` or ``register_app_class(MyApp, name="CalendarApp")``.
    """

    def register(cls: AppClassT) -> AppClassT:
        default_app_registry.register(cls, name)
        return cls

    return register if app_class is None else register(app_class)
