"""Falling back to a weaker output mode when a server rejects a ``response_format``.

Under the ``auto`` output mode a call first asks for the strongest structured output its
endpoint is thought to support; a server that rejects that ``response_format`` on the
first request is remembered as not supporting it, and the call is made again in the next
weaker mode (``json_schema`` → ``json_object`` → ``prompt``). A replay that holds no
such request means the recording run fell back too.
"""

from __future__ import annotations

import logging

from sotopia_are.llm.config import Endpoint
from sotopia_are.llm.errors import LLMError, ReplayMissError
from sotopia_are.llm.network import describe_endpoint
from sotopia_are.llm.structured import (
    OutputMode,
    OutputModeMemory,
    rejects_response_format,
    weaker_output_mode,
)

__all__ = ["weaker_mode"]

# Under the session's name, as it was logged before this module was split from it: log
# filters set on it keep working.
_log = logging.getLogger("sotopia_are.llm.session")


def weaker_mode(
    error: LLMError,
    mode: OutputMode | None,
    endpoint: Endpoint,
    *,
    configured: str,
    memory: OutputModeMemory,
) -> OutputMode | None:
    """The mode to try after ``error`` ended a call's first request, when ``auto`` (the
    ``configured`` output mode) chose ``mode`` and the server rejected its
    ``response_format`` (remembered for the endpoint in ``memory``), or a replay holds no
    such request (the recording run fell back too); else None."""
    if configured != "auto" or mode is None:
        return None
    if error.call is None or any(a.raw_text is not None for a in error.call.attempts):
        return None  # a later request failed: the format was accepted before
    if isinstance(error, ReplayMissError):
        return weaker_output_mode(mode)
    # The server's own words, not our error message (whose hint names response_format).
    if not rejects_response_format(str(error.__cause__ or "")):
        return None
    weaker = memory.weaken(endpoint.key, mode)
    _log.warning(
        "%s rejected response_format %r; using output mode %r for it from now on (%s)",
        describe_endpoint(endpoint),
        mode,
        weaker,
        error,
    )
    return weaker
