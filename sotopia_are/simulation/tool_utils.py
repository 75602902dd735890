"""Tools: the app methods an agent, a user, the environment or a data loader may call.

ARE's ``tool_utils`` at ARE's import path. ``@app_tool()`` (agent), ``@user_tool()``,
``@env_tool()`` and ``@data_tool()`` mark a method; :func:`build_tool` describes a marked
method of an app as an :class:`AppTool` (name ``"<app>__<method>"``, the docstring's
description, one :class:`AppToolArg` per parameter) that can be called and rendered as an
OpenAI function. Docstrings are read in reST (``:param x:``, ``:returns:``) or Google
style (``Args:`` / ``Returns:``), as ARE's apps write them.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from random import Random
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

__all__ = [
    "APPTOOL_ATTR_NAME",
    "AppTool",
    "AppToolAdapter",
    "AppToolArg",
    "OperationType",
    "ToolAttributeName",
    "app_tool",
    "build_tool",
    "data_tool",
    "env_tool",
    "format_type_name",
    "tool_decorator",
    "user_tool",
]

APPTOOL_ATTR_NAME = "_are_simulation_app_tool"
"""The attribute under which a method remembers the AppTool built for it."""


class OperationType(enum.Enum):
    """Whether an app call reads or changes the app's state."""

    READ = "read"
    WRITE = "write"


def _json_type(type_name: str) -> str:
    """ARE's JSON-schema spelling of a Python type name (int → integer, float → number)."""
    return {"int": "integer", "float": "number"}.get(type_name, type_name)


@dataclass
class AppToolArg:
    """One parameter of a tool: name, type (as text and as object), description, default."""

    name: str
    arg_type: str
    description: str | None
    has_default: bool = False
    default: Any | None = None
    example_value: Any | None = None
    type_obj: Any | None = None

    def __str__(self) -> str:
        text = (
            f"name: {self.name}, type: {_json_type(str(self.arg_type))}, "
            f"description: {self.description}"
        )
        return text + (f", default: {self.default}" if self.has_default else "")


@dataclass
class AppTool:
    """A callable description of one app method (ARE's fields; equal when they are).

    Calling it calls the method on ``class_instance``; with ``failure_probability`` set
    a call fails at that rate, drawn from ``Random(seed)`` (to test agents' robustness).
    A method decorated with an ``llm_formatter`` has its result formatted when called
    through the tool (never when called directly).
    """

    class_name: str
    app_name: str
    name: str
    function_description: str | None
    args: list[AppToolArg]
    return_type: Any | None = None
    return_description: str | None = None
    function: Callable[..., Any] | None = None
    class_instance: Any | None = None
    write_operation: bool | None = None
    _public_name: str | None = None
    _public_description: str | None = None
    failure_probability: float | None = None
    failure_message_template: str = (
        "Calling {name} failed with error: Internal error - Retry again later"
    )
    seed: int | None = None
    rng: Random | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.failure_probability is not None and not 0.0 <= self.failure_probability <= 1.0:
            raise ValueError(
                f"failure_probability must be between 0 and 1, got {self.failure_probability}"
            )
        if "{name}" not in self.failure_message_template:
            raise ValueError("failure_message_template must contain the placeholder {name}")
        if self.failure_probability is not None:
            self.rng = Random(self.seed)
        if self.function is not None:
            target = getattr(self.function, "__func__", self.function)
            # A builtin or a callable object may take no attributes: it is then not found
            # back from its function, which only costs the lookup.
            with contextlib.suppress(AttributeError, TypeError):
                setattr(target, APPTOOL_ATTR_NAME, self)
        if self._public_name is None:
            self._public_name = self.name
        if self._public_description is None:
            self._public_description = self.function_description

    @property
    def arg_descriptions(self) -> str:
        """The arguments, one per line, as ARE's prompts list them."""
        return "\n\t- ".join(str(arg) for arg in self.args)

    @property
    def func_name(self) -> str | None:
        """The method's name."""
        return self.function.__name__ if self.function is not None else None

    @staticmethod
    def get_tool_for_function(func: Callable[..., Any]) -> AppTool | None:
        """The AppTool last built for ``func`` (a function or a bound method), if any."""
        tool = getattr(func, APPTOOL_ATTR_NAME, None)
        if tool is None:
            tool = getattr(getattr(func, "__func__", None), APPTOOL_ATTR_NAME, None)
        return tool if isinstance(tool, AppTool) else None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.function is None:
            raise RuntimeError(f"tool {self.name} has no function to call")
        if self.failure_probability is not None:
            if self.rng is None:
                self.rng = Random(self.seed)
            if self.rng.random() < self.failure_probability:
                raise RuntimeError(self.failure_message_template.format(name=self.name))
        if self.class_instance is not None:
            result = self.function(self.class_instance, *args, **kwargs)
        else:
            result = self.function(*args, **kwargs)
        formatter = getattr(self.function, "llm_formatter", None)
        return formatter(result) if formatter is not None else result

    def to_metadata_dict(self) -> dict[str, Any]:
        """The tool as JSON-ready metadata (exports, UIs)."""
        return {
            "name": self.name,
            "description": self.function_description,
            "args": [{**asdict(arg), "type": arg.arg_type} for arg in self.args],
            "return_type": self.return_type,
            "return_description": self.return_description,
            "write_operation": bool(self.write_operation),
            "role": getattr(self, "role", ""),
        }

    def to_open_ai(self) -> dict[str, Any]:
        """The tool in OpenAI's function-calling format (every argument required)."""
        return {
            "type": "function",
            "function": {
                "name": self._public_name,
                "description": self._public_description,
                "parameters": {
                    "type": "object",
                    "properties": {
                        arg.name: {"type": _json_type(arg.arg_type), "description": arg.description}
                        for arg in self.args
                    },
                    "required": [arg.name for arg in self.args],
                },
            },
        }


class AppToolAdapter:
    """An AppTool as an agent framework's tool: ``name``, ``description``, ``inputs`` and
    ``forward(*args, **kwargs)`` (which calls the tool, formatter included)."""

    def __init__(self, app_tool: AppTool) -> None:
        self.app_tool = app_tool
        self.name = app_tool._public_name or app_tool.name
        self.description = app_tool._public_description or ""
        self.inputs = {
            arg.name: {"type": _json_type(arg.arg_type), "description": arg.description or ""}
            for arg in app_tool.args
        }
        self.output_type = app_tool.return_type

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Call the tool."""
        return self.app_tool(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)


class ToolAttributeName(enum.Enum):
    """The attribute each tool decorator sets on the method it marks."""

    APP = "_is_app_tool"
    ENV = "_is_env_tool"
    DATA = "_is_data_tool"
    USER = "_is_user_tool"


def tool_decorator(
    llm_formatter: Callable[[Any], Any] | None = None,
    attribute_name: ToolAttributeName = ToolAttributeName.APP,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a method as a tool of kind ``attribute_name``; ``llm_formatter`` formats its
    result when it is called through its AppTool."""

    def mark(method: Callable[..., Any]) -> Callable[..., Any]:
        setattr(method, attribute_name.value, True)
        method.llm_formatter = llm_formatter  # type: ignore[attr-defined]
        return method

    return mark


def app_tool(
    llm_formatter: Callable[[Any], Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a method as a tool of the agent."""
    return tool_decorator(llm_formatter, ToolAttributeName.APP)


def env_tool(
    llm_formatter: Callable[[Any], Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a method as a tool of the environment (what scenario events call)."""
    return tool_decorator(llm_formatter, ToolAttributeName.ENV)


def data_tool(
    llm_formatter: Callable[[Any], Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a method as a tool that loads data into the app."""
    return tool_decorator(llm_formatter, ToolAttributeName.DATA)


def user_tool(
    llm_formatter: Callable[[Any], Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a method as a tool of the user."""
    return tool_decorator(llm_formatter, ToolAttributeName.USER)


def format_type_name(type_obj: Any) -> str:
    """A type as ARE writes it: ``int``, ``list[str]``, ``str | None`` (None last)."""
    origin = get_origin(type_obj)
    if origin is None:
        return str(getattr(type_obj, "__name__", type_obj))
    args = get_args(type_obj)
    if origin in (Union, UnionType):
        names = [format_type_name(a) for a in args if a is not NoneType]
        if NoneType in args:
            names.append("None")
        return " | ".join(names)
    base = getattr(origin, "__name__", None) or str(getattr(type_obj, "_name", origin))
    return f"{base}[{', '.join(format_type_name(a) for a in args)}]" if args else base


@dataclass
class _Docstring:
    description: str | None
    params: dict[str, str]
    returns: str | None


_REST_FIELD = re.compile(r"^:(param|parameter|arg|argument|returns?|raises?)\s*([^:]*):\s*(.*)$")
_GOOGLE_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Example|Examples):\s*$")
_GOOGLE_PARAM = re.compile(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str | None) -> _Docstring:
    """Description, parameter descriptions and return description of a docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    returns: str | None = None
    target: tuple[str, str] | None = None  # what a continuation line extends
    section: str | None = None
    for raw in lines:
        line = raw.strip()
        rest = _REST_FIELD.match(line)
        google = _GOOGLE_SECTION.match(line)
        if rest is not None:
            kind, name, text = rest.groups()
            section = None
            if kind.startswith("return"):
                returns, target = text, ("returns", "")
            elif kind.startswith("raise"):
                target = None
            else:
                name = name.split()[-1] if name.split() else name
                params[name], target = text, ("param", name)
        elif google is not None:
            section, target = google.group(1), None
        elif section in ("Args", "Arguments", "Parameters") and _GOOGLE_PARAM.match(line):
            name, text = _GOOGLE_PARAM.match(line).groups()  # type: ignore[union-attr]
            params[name], target = text, ("param", name)
        elif section == "Returns" and line:
            returns = f"{returns} {line}" if returns else line
        elif target is not None and line:
            if target[0] == "returns":
                returns = f"{returns} {line}"
            else:
                params[target[1]] = f"{params[target[1]]} {line}"
        elif section is None and target is None:
            description.append(line)
    text = "\n".join(description).strip()
    text = re.sub(r"\n{2,}", "\n", text)
    return _Docstring(text or None, params, returns)


def build_tool(
    app: Any, func: Callable[..., Any], failure_probability: float | None = None
) -> AppTool:
    """The AppTool of ``func`` (a method of ``app``'s class). ValueError if it has no
    docstring: an agent cannot use a tool nobody described."""
    parsed = _parse_docstring(func.__doc__)
    if parsed.description is None:
        raise ValueError(f"Cannot register tool {func.__name__} without documenting it!")
    try:
        hints = get_type_hints(func)
    except Exception:  # an annotation that does not resolve: describe it as text
        hints = {}
    return_type = hints.get("return")
    operation = getattr(func, "__operation_type__", None)
    args: list[AppToolArg] = []
    for name, param in inspect.signature(func).parameters.items():
        if name == "self":
            continue
        type_obj = hints.get(name, "Any")
        has_default = param.default is not inspect.Parameter.empty
        args.append(
            AppToolArg(
                name=name,
                arg_type=format_type_name(type_obj),
                description=parsed.params.get(name),
                has_default=has_default,
                default=param.default if has_default else None,
                type_obj=type_obj,
            )
        )
    return AppTool(
        class_name=type(app).__name__,
        app_name=app.name,
        name=f"{app.name}__{func.__name__}",
        function_description=parsed.description,
        args=args,
        return_type=None if return_type is None else format_type_name(return_type),
        return_description=parsed.returns,
        function=func,
        class_instance=app,
        write_operation=None if operation is None else operation is OperationType.WRITE,
        failure_probability=failure_probability,
    )
