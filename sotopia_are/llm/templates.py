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

import functools
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

import jinja2

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
        self._templates: dict[str, jinja2.Template] = {}

    def render(self, name: str, variables: Mapping[str, Any] | None = None) -> list[Message]:
        """Render template ``name`` with ``variables`` into chat messages."""
        template = self._load(name)
        messages: list[Message] = []
        try:
            if not template.blocks:
                text = template.render(dict(variables or {})).strip()
                if text:
                    messages.append(of_valid_fields(Message, {"role": "user", "content": text}))
                return messages
            # The context Jinja makes of the globals and the variables, merged once here.
            context = template.new_context({**template.globals, **(variables or {})}, shared=True)
            for block, render in template.blocks.items():
                role = _role_of(name, block)  # every block is a message, empty or not
                content = "".join(render(context)).strip()
                if content:
                    # A role of the convention's and rendered text: a valid message.
                    messages.append(of_valid_fields(Message, {"role": role, "content": content}))
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

    def _load(self, name: str) -> jinja2.Template:
        loaded = self._templates.get(name)
        if loaded is not None:
            return loaded
        try:
            template = self._env.get_template(name)
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
        self._templates[name] = template
        return template


@functools.lru_cache(maxsize=1024)  # asked of every block of every render
def _role_of(template: str, block: str) -> str:
    role = block.split("_", 1)[0]
    if role not in _ROLES:
        raise TemplateError(
            f"prompt template {template!r}: block {block!r} is not a message; "
            f"name blocks system, user or assistant (optionally with a _suffix)"
        )
    return role
