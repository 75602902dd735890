"""Prompt templates: Jinja2 files in the packaged ``prompts/`` directory.

Templates are rendered with ``StrictUndefined``, so a missing variable is a
:class:`~sotopia_are.llm.errors.TemplateError` naming it. A template becomes chat
messages by one convention: each top-level ``{% block %}`` named ``system``, ``user`` or
``assistant`` — optionally with a suffix after ``_``, such as ``user_2`` or
``assistant_example`` — is one message with that role, in the order the blocks appear.
Blocks that render to whitespace are dropped; a template with no blocks is one user
message. Splitting by block structure (not by marker text in the output) means variable
content can never forge a message boundary. Templates may ``include`` and ``import``
others but not ``extend`` them (only a template's own blocks become messages).

Templates are loaded from the installed package (``sotopia_are/prompts`` inside the
wheel), falling back to the repository's ``prompts/`` for an editable install — never
from the current working directory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, get_args

import jinja2
from jinja2 import nodes
from jinja2.runtime import Context

from sotopia_are.llm.errors import TemplateError
from sotopia_are.llm.request import Message, Role
from sotopia_are.llm.valid_parts import of_valid_fields

__all__ = ["PromptLibrary", "packaged_prompts_dir"]

_ROLES: frozenset[str] = frozenset(get_args(Role))


def packaged_prompts_dir() -> Path:
    """The directory the project's templates are loaded from."""
    package_dir = Path(__file__).resolve().parent.parent
    installed = package_dir / "prompts"  # where the wheel puts them
    if installed.is_dir():
        return installed
    source_tree = package_dir.parent / "prompts"  # editable install: the repository root
    if source_tree.is_dir():
        return source_tree
    raise TemplateError(f"no prompts directory: looked in {installed} and {source_tree}")


class PromptLibrary:
    """Renders named templates (``"llm/repair.j2"``) into chat messages.

    ``extra_dirs`` are searched before the packaged templates, so a user can add
    templates or override the project's.
    """

    def __init__(self, *extra_dirs: Path | str) -> None:
        self.search_path: tuple[Path, ...] = (
            *(Path(d) for d in extra_dirs),
            packaged_prompts_dir(),
        )
        self._env = jinja2.Environment(
            loader=jinja2.FileSystemLoader([str(p) for p in self.search_path]),
            undefined=jinja2.StrictUndefined,
            autoescape=False,  # prompts are plain text, not HTML
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
            # Read once per library: a stat of the file per model call is measurable.
            auto_reload=False,
        )
        self._templates: dict[str, _Loaded] = {}
        # The messages of plain blocks (see _plain_names), by template, block and values.
        self._plain: dict[tuple[object, ...], Message] = {}

    def render(self, name: str, variables: Mapping[str, Any] | None = None) -> list[Message]:
        """Render template ``name`` with ``variables`` into chat messages."""
        loaded = self._templates.get(name) or self._load(name)
        template = loaded.template
        messages: list[Message] = []
        variables = variables or {}
        try:
            if not loaded.blocks:
                text = template.render(dict(variables)).strip()
                if text:
                    messages.append(of_valid_fields(Message, {"role": "user", "content": text}))
                return messages
            context: Context | None = None
            for block, role, render, plain in loaded.blocks:
                if role is None:
                    _role_of(name, block)  # not a message's name: a TemplateError
                key = _plain_key(name, block, plain, variables) if plain is not None else None
                if key is not None:
                    message = self._plain.get(key)
                    if message is not None:
                        messages.append(message)
                        continue
                if context is None:
                    # What template.new_context(variables, shared=True) makes (its parent
                    # the globals and variables merged once here), without its two layers.
                    # A template that names no global and reaches no other template reads
                    # only the variables: a dict of them is its parent as it is (a render
                    # never writes to its context's parent).
                    own = loaded.own_names and type(variables) is dict
                    context = Context(
                        template.environment,
                        cast(dict[str, Any], variables)
                        if own
                        else {**template.globals, **variables},
                        template.name,
                        template.blocks,
                        # The globals' names serve only an import, which such a template
                        # has none of.
                        None if own else template.globals,
                    )
                content = "".join(render(context)).strip()
                if content:  # every block is a message, empty or not
                    # A role of the convention's and rendered text: a valid message.
                    message = of_valid_fields(Message, {"role": role, "content": content})
                    messages.append(message)
                    if key is not None:
                        if len(self._plain) >= _KEPT_PLAIN:
                            self._plain.clear()
                        self._plain[key] = message
        except jinja2.UndefinedError as exc:
            raise TemplateError(
                f"prompt template {name!r}: {exc.message}; pass it in the template variables"
            ) from exc
        except jinja2.TemplateError as exc:
            raise TemplateError(f"prompt template {name!r}: {exc}") from exc
        return messages

    def names(self) -> Sequence[str]:
        """Every template name the library can render."""
        return sorted(self._env.list_templates(extensions=["j2"]))

    def version(self, name: str) -> str:
        """``name@<hash>``: the template's name and the first 12 hex digits of the SHA-256
        of its source, so records can say exactly which prompt produced an answer."""
        self._load(name)  # a missing or broken template is a TemplateError, as in render
        assert self._env.loader is not None
        source, _, _ = self._env.loader.get_source(self._env, name)
        return f"{name}@{hashlib.sha256(source.encode()).hexdigest()[:12]}"

    def _load(self, name: str) -> _Loaded:
        loaded = self._templates.get(name)
        if loaded is not None:
            return loaded
        try:
            template = self._env.get_template(name)
            assert self._env.loader is not None
            source, _, _ = self._env.loader.get_source(self._env, name)
            tree = self._env.parse(source, name)
        except jinja2.TemplateNotFound as exc:
            searched = ", ".join(str(p) for p in self.search_path)
            raise TemplateError(f"prompt template {name!r} not found in {searched}") from exc
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(
                f"prompt template {name!r}, line {exc.lineno}: {exc.message}"
            ) from exc
        # Jinja layers a template's globals over the environment's in a ChainMap, which
        # every render copies into a new context key by key (most of the cost of a
        # render). Nothing adds globals to this library's private environment, so one
        # flat copy says the same.
        template.globals = dict(template.globals)
        plain = {block.name: _plain_names(block) for block in tree.find_all(nodes.Block)}
        loaded = self._templates[name] = _Loaded(
            template,
            tuple(
                (block, _role(block), render, plain.get(block))
                for block, render in template.blocks.items()
            ),
            _own_names(tree, template.globals),
        )
        return loaded


@dataclass(frozen=True)
class _Loaded:
    """A loaded template and its blocks: each one's name, role, render function, and the
    variables it shows when it is plain (see :func:`_plain_names`). A block whose name is
    no role's fails the render that reaches it."""

    template: jinja2.Template
    blocks: tuple[
        tuple[str, str | None, Callable[[Context], Iterator[str]], tuple[str, ...] | None], ...
    ]
    own_names: bool
    """Whether the template reads no global and no other template (see
    :func:`_own_names`)."""


_KEPT_PLAIN = 1024
"""Plain blocks' messages a library keeps (an agent's system message: one per agent name)."""

_PLAIN_TYPES = (str, int)


def _plain_names(block: nodes.Block) -> tuple[str, ...] | None:
    """The variables a block shows, when it is plain: text and variables only (no filter,
    test, call, condition or loop), so that its text is a function of those variables'
    values alone; else None."""
    names: dict[str, None] = {}
    for node in block.body:
        if not isinstance(node, nodes.Output):
            return None
        for part in node.nodes:
            if isinstance(part, nodes.Name) and part.ctx == "load":
                names[part.name] = None
            elif not isinstance(part, nodes.TemplateData):
                return None
    return tuple(names)


_OTHER_TEMPLATES = (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)


def _own_names(tree: nodes.Template, globals_: Mapping[str, Any]) -> bool:
    """Whether ``tree`` names none of ``globals_`` and reaches no other template
    (``extends``, ``include``, ``import``): then what its render reads of its context's
    parent is the variables alone, and the globals need not be merged in."""
    if any(True for _ in tree.find_all(_OTHER_TEMPLATES)):
        return False
    # Every name read anywhere, blocks included (jinja's meta.find_undeclared_variables
    # does not look into blocks), local or not: a superset is only a merge too many.
    return not any(
        node.name in globals_ for node in tree.find_all(nodes.Name) if node.ctx == "load"
    )


def _plain_key(
    template: str, block: str, names: tuple[str, ...], variables: Mapping[str, Any]
) -> tuple[object, ...] | None:
    """What a plain block's message is kept by: the template, the block and the values of
    its variables, when each is given and is a string or an int (exactly: their text is
    then their value's); else None (rendered as any block)."""
    key: list[object] = [template, block]
    for variable in names:
        value = variables.get(variable, _PLAIN_TYPES)
        if type(value) not in _PLAIN_TYPES:
            return None
        key += (type(value), value)
    return tuple(key)


def _role(block: str) -> str | None:
    """The role of the message of ``block`` (None: it names none)."""
    role = block.split("_", 1)[0]
    return role if role in _ROLES else None


def _role_of(template: str, block: str) -> str:
    role = _role(block)
    if role is None:
        raise TemplateError(
            f"prompt template {template!r}: block {block!r} is not a message; "
            f"name blocks system, user or assistant (optionally with a _suffix)"
        )
    return role
