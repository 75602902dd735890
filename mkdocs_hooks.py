"""mkdocs hooks: the docstrings' Sphinx cross-reference roles read as plain code.

The docstrings write ``:func:`run``` and ``:class:`~sotopia_are.record.EpisodeRecord```
(the house style, read by ``help()``); mkdocstrings renders them as text followed by code.
Drop the role, and as Sphinx does, a leading ``~`` keeps only the last name.
"""

import re
from typing import Any

_ROLE = re.compile(r":(?:func|class|meth|attr|data|mod|exc|obj):(?=<code>)")
_TILDE = re.compile(r"<code>~(?:[\w.]+\.)?(\w+)</code>")


def on_page_content(html: str, **_: Any) -> str:
    """The page's HTML with roles dropped and ``~a.b.C`` shown as ``C``."""
    return _TILDE.sub(r"<code>\1</code>", _ROLE.sub("", html))
