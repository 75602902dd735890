"""`Receipts`: what each submission of a seat was answered, by its client id, so a repeat
(a double click, a retry after a dropped connection) gets the first answer and does nothing.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

__all__ = ["CLIENT_ID", "Receipts"]

CLIENT_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
"""What a client id may be: 1 to 64 letters, digits, ``_ . : -`` (a UUID fits)."""


class Receipts:
    """The answers given to each seat's submissions, by client id; at most ``keep`` per
    seat (the oldest forgotten first)."""

    def __init__(self, keep: int = 1000) -> None:
        self.keep = keep
        self._answers: dict[Hashable, OrderedDict[str, tuple[int, dict[str, Any]]]] = {}

    def get(self, seat: Hashable, client_id: str) -> tuple[int, dict[str, Any]] | None:
        """The answer (status, body) given to ``seat``'s submission ``client_id``, if any."""
        return self._answers.get(seat, OrderedDict()).get(client_id)

    def put(self, seat: Hashable, client_id: str, status: int, body: dict[str, Any]) -> None:
        """Keep the answer to ``seat``'s submission ``client_id``."""
        answers = self._answers.setdefault(seat, OrderedDict())
        answers[client_id] = (status, body)
        while len(answers) > self.keep:
            answers.popitem(last=False)
