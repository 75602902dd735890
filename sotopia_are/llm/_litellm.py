"""The single doorway to litellm: nothing else in the project imports it.

Importing this module sets ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (unless the user chose
otherwise) so that litellm, when it is finally imported, reads its bundled price table
instead of fetching one over the network. litellm itself is imported only by
:func:`load_litellm`, on the first real call, which keeps ``import sotopia_are`` cheap.
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from typing import Any

__all__ = ["load_litellm"]

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@cache
def load_litellm() -> Any:
    """Import and return the litellm module (typed ``Any``: litellm is untyped for us)."""
    module: Any = importlib.import_module("litellm")
    # litellm prints a "Give Feedback / Get Help" banner on every mapped exception; our
    # errors carry their own guidance, so the banner is noise.
    module.suppress_debug_info = True
    return module
